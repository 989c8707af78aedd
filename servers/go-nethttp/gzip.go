package main

// The gzip scenario: a fixed text, compressed anew for every request that
// accepts gzip, with compress/gzip at its default level.

import (
	"bytes"
	"compress/gzip"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

func registerGzip(mux *http.ServeMux) {
	text, err := os.ReadFile(filepath.Join(mustEnv("FILES_DIR"), "gzip-text.txt"))
	if err != nil {
		log.Fatalf("gzip: %v", err)
	}
	// A gzip.Writer holds its compressor's tables (hundreds of KiB):
	// reused through a pool, as Go's gzip middlewares do, not made per
	// request.
	writers := sync.Pool{New: func() any { return gzip.NewWriter(nil) }}
	mux.HandleFunc("GET /gzip", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Vary", "Accept-Encoding")
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			h.Set("Content-Length", strconv.Itoa(len(text)))
			w.Write(text)
			return
		}
		var buf bytes.Buffer
		gz := writers.Get().(*gzip.Writer)
		gz.Reset(&buf)
		gz.Write(text)
		gz.Close()
		writers.Put(gz)
		h.Set("Content-Encoding", "gzip")
		// Set explicitly: net/http chunks a body larger than its buffer.
		h.Set("Content-Length", strconv.Itoa(buf.Len()))
		w.Write(buf.Bytes())
	})
}
