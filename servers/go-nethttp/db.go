package main

// The json, db, queries, fortunes and updates routes (scenarios/<name>.toml,
// TechEmpower's shapes). They are registered under every SCENARIO, as the
// contract asks; the database is opened only when DATABASE_URL is set, with
// pgx v5's own pool (pgxpool) of DB_POOL connections, and the fortunes page
// is rendered by html/template, Go's standard escaping template.

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	worldRows         = 10000
	maxQueries        = 500
	selectWorld       = "SELECT id, randomnumber FROM world WHERE id = $1"
	selectFortunes    = "SELECT id, message FROM fortune"
	additionalFortune = "Additional fortune added at request time."
	// One statement for the whole batch; ids are sorted so two concurrent
	// batches lock rows in the same order and cannot deadlock.
	updateWorlds = "UPDATE world SET randomnumber = v.r FROM " +
		"(SELECT unnest($1::int[]) AS id, unnest($2::int[]) AS r) AS v WHERE world.id = v.id"
)

type world struct {
	ID           int32 `json:"id"`
	RandomNumber int32 `json:"randomNumber"`
}

type fortune struct {
	ID      int32
	Message string
}

var fortunesTemplate = template.Must(template.New("fortunes").Parse(
	`<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr>` +
		`{{range .}}<tr><td>{{.ID}}</td><td>{{.Message}}</td></tr>{{end}}</table></body></html>`))

// registerDB adds the five routes to mux. With no DATABASE_URL only /json
// works; the others answer 500 rather than invent a row.
func registerDB(mux *http.ServeMux) {
	var pool *pgxpool.Pool
	if url := os.Getenv("DATABASE_URL"); url != "" {
		pool = openPool(url)
	}
	mux.HandleFunc("GET /json", func(w http.ResponseWriter, r *http.Request) {
		body, _ := json.Marshal(struct {
			Message string `json:"message"`
		}{"Hello, World!"})
		writeJSON(w, body)
	})
	withDB := func(h func(*pgxpool.Pool, http.ResponseWriter, *http.Request) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if pool == nil {
				http.Error(w, "DATABASE_URL is not set", http.StatusInternalServerError)
				return
			}
			if err := h(pool, w, r); err != nil {
				log.Printf("%s: %v", r.URL.Path, err)
				http.Error(w, "database error", http.StatusInternalServerError)
			}
		}
	}
	mux.HandleFunc("GET /db", withDB(handleDB))
	mux.HandleFunc("GET /queries", withDB(handleQueries))
	mux.HandleFunc("GET /fortunes", withDB(handleFortunes))
	mux.HandleFunc("GET /updates", withDB(handleUpdates))
}

// isStackScenario: json, db, queries, fortunes, updates, and the variants
// of them that fairbench names `<route>-<detail>` (queries-1).
func isStackScenario(name string) bool {
	route, _, _ := strings.Cut(name, "-")
	switch route {
	case "json", "db", "queries", "fortunes", "updates":
		return true
	}
	return false
}

func openPool(url string) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		log.Fatalf("DATABASE_URL: %v", err)
	}
	size, err := strconv.Atoi(envOr("DB_POOL", "4"))
	if err != nil || size < 1 {
		log.Fatalf("DB_POOL must be a positive integer, got %q", os.Getenv("DB_POOL"))
	}
	cfg.MaxConns = int32(size)
	// Open every connection before the first request, so connecting is not
	// timed as part of the first requests of a run.
	cfg.MinConns = int32(size)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		log.Fatalf("database: %v", err)
	}
	log.Printf("go-nethttp: pgxpool of %d connection(s)", size)
	return pool
}

func handleDB(pool *pgxpool.Pool, w http.ResponseWriter, r *http.Request) error {
	id, err := strconv.Atoi(r.URL.Query().Get("id"))
	if err != nil || id < 1 || id > worldRows {
		http.Error(w, "id must be an integer in 1..=10000", http.StatusBadRequest)
		return nil
	}
	var row world
	if err := pool.QueryRow(r.Context(), selectWorld, id).Scan(&row.ID, &row.RandomNumber); err != nil {
		return err
	}
	body, err := json.Marshal(row)
	if err != nil {
		return err
	}
	writeJSON(w, body)
	return nil
}

func handleQueries(pool *pgxpool.Pool, w http.ResponseWriter, r *http.Request) error {
	rows, err := readWorlds(r, pool, randomIDs(queryCount(r), false))
	if err != nil {
		return err
	}
	body, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	writeJSON(w, body)
	return nil
}

func handleUpdates(pool *pgxpool.Pool, w http.ResponseWriter, r *http.Request) error {
	// Distinct ids: a row drawn twice would get two new numbers of which
	// only one could be stored, and the answer would not match the table.
	rows, err := readWorlds(r, pool, randomIDs(queryCount(r), true))
	if err != nil {
		return err
	}
	ids := make([]int32, len(rows))
	numbers := make([]int32, len(rows))
	for i := range rows {
		rows[i].RandomNumber = int32(rand.IntN(worldRows) + 1)
	}
	sorted := slices.Clone(rows)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	for i, row := range sorted {
		ids[i], numbers[i] = row.ID, row.RandomNumber
	}
	if _, err := pool.Exec(r.Context(), updateWorlds, ids, numbers); err != nil {
		return err
	}
	body, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	writeJSON(w, body)
	return nil
}

func handleFortunes(pool *pgxpool.Pool, w http.ResponseWriter, r *http.Request) error {
	rows, err := pool.Query(r.Context(), selectFortunes)
	if err != nil {
		return err
	}
	fortunes := []fortune{{0, additionalFortune}}
	for rows.Next() {
		var f fortune
		if err := rows.Scan(&f.ID, &f.Message); err != nil {
			rows.Close()
			return err
		}
		fortunes = append(fortunes, f)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	sort.Slice(fortunes, func(i, j int) bool { return fortunes[i].Message < fortunes[j].Message })
	// Rendered into a buffer so the answer carries a Content-Length: net/http
	// would chunk a streamed body past its 2 KiB buffer.
	var page bytes.Buffer
	if err := fortunesTemplate.Execute(&page, fortunes); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(page.Len()))
	w.Write(page.Bytes())
	return nil
}

// readWorlds reads one row per id, one query after another, each on a pool
// connection: the N round trips are what the queries scenario measures.
func readWorlds(r *http.Request, pool *pgxpool.Pool, ids []int) ([]world, error) {
	rows := make([]world, len(ids))
	for i, id := range ids {
		if err := pool.QueryRow(r.Context(), selectWorld, id).Scan(&rows[i].ID, &rows[i].RandomNumber); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// queryCount is TechEmpower's rule: missing or not an integer is 1, and the
// count is clamped to 1..=500.
func queryCount(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("queries"))
	if err != nil || n < 1 {
		return 1
	}
	return min(n, maxQueries)
}

func randomIDs(n int, distinct bool) []int {
	ids := make([]int, 0, n)
	seen := make(map[int]bool, n)
	for len(ids) < n {
		id := rand.IntN(worldRows) + 1
		if distinct {
			if seen[id] {
				continue
			}
			seen[id] = true
		}
		ids = append(ids, id)
	}
	return ids
}

func writeJSON(w http.ResponseWriter, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}
