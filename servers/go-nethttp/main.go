// The study's reference server: Go's net/http, standard library only.
//
// Go's out-of-the-box response (Content-Length, Content-Type, Date) is the
// shape every other server's `normalized` response copies, so here `default`
// and `normalized` differ only for the file scenario, where http.FileServer
// adds validators (Last-Modified, Accept-Ranges).
package main

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"
)

func main() {
	port := mustEnv("PORT")
	scenario := mustEnv("SCENARIO")
	response := envOr("RESPONSE", "default")
	protocol := envOr("PROTOCOL", "http/1.1")
	if response == "study" {
		if protocol != "http/1.1" {
			log.Fatalf("the study's code (RESPONSE=study) serves HTTP/1.1 only, as published; PROTOCOL=%s", protocol)
		}
		studyMain(port, scenario)
		return
	}

	// Go already sizes GOMAXPROCS from the CPU affinity mask, but fairbench's
	// contract is "use exactly CORES", so it is not left to inference.
	if cores, err := strconv.Atoi(envOr("CORES", "1")); err == nil && cores > 0 {
		runtime.GOMAXPROCS(cores)
	}

	mux := http.NewServeMux()
	switch scenario {
	case "static":
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			// No Content-Type set: net/http sniffs `text/plain; charset=utf-8`
			// from the body, as in the plain Go hello world.
			io.WriteString(w, "Hello World!\n")
		})
	case "dynamic":
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "The time is %s\n", time.Now().UTC().Format(time.RFC3339))
		})
	case "file":
		dir := mustEnv("FILES_DIR")
		if response == "normalized" {
			// FileServer's Last-Modified and Accept-Ranges cannot be switched
			// off, so the normalized variant streams the file itself. The
			// explicit Content-Length keeps net/http from chunking a body
			// larger than its 2 KiB buffer.
			path := filepath.Join(dir, "hello-16k.txt")
			mux.HandleFunc("GET /hello-16k.txt", func(w http.ResponseWriter, r *http.Request) {
				f, err := os.Open(path)
				if err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				defer f.Close()
				st, err := f.Stat()
				if err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				h := w.Header()
				h.Set("Content-Type", "text/plain; charset=utf-8")
				h.Set("Content-Length", strconv.FormatInt(st.Size(), 10))
				io.Copy(w, f)
			})
		} else {
			mux.Handle("GET /hello-16k.txt", http.FileServer(http.Dir(dir)))
		}
	case "gzip":
		registerGzip(mux)
	default:
		// json, db, queries, ...: served below, as under every scenario.
		if !isStackScenario(scenario) {
			log.Fatalf("unknown SCENARIO %q", scenario)
		}
	}
	registerDB(mux)

	// ":port" is the dual-stack any address: [::] with IPv4-mapped addresses.
	log.Printf("go-nethttp: %s/%s over %s on :%s, GOMAXPROCS=%d", scenario, response, protocol, port, runtime.GOMAXPROCS(0))
	log.Fatal(serve(&http.Server{Addr: ":" + port, Handler: mux}, protocol))
}

// serve listens for PROTOCOL: HTTP/1.1 as ListenAndServe does; h2c (HTTP/2
// with prior knowledge, Go 1.24's Server.Protocols) beside HTTP/1.1 on the
// same port; h2 over TLS with the run's certificate, chosen by ALPN.
func serve(srv *http.Server, protocol string) error {
	var p http.Protocols
	switch protocol {
	case "http/1.1":
		return srv.ListenAndServe()
	case "h2c":
		p.SetHTTP1(true)
		p.SetUnencryptedHTTP2(true)
		srv.Protocols = &p
		return srv.ListenAndServe()
	case "h2":
		p.SetHTTP1(true)
		p.SetHTTP2(true)
		srv.Protocols = &p
		return srv.ListenAndServeTLS(mustEnv("TLS_CERT"), mustEnv("TLS_KEY"))
	}
	return fmt.Errorf("unknown PROTOCOL %q: expected http/1.1, h2c or h2", protocol)
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

func mustEnv(key string) string {
	v := os.Getenv(key)
	if v == "" {
		log.Fatalf("%s is not set", key)
	}
	return v
}
