package main

// The `study` response shape: the Go server exactly as the Dart-vs-Go study
// published it (docs/servers/study-code.md quotes it): DefaultServeMux, one
// handler on "/", fmt.Fprintln, the dynamic body "The time is: " and the
// local time in RFC 3339, ListenAndServe(":PORT", nil). Its single-core runs
// set GOMAXPROCS(1); its all-core runs left Go's default. So WORKERS, when
// the suite gives it, is GOMAXPROCS, and otherwise nothing is set: Go sizes
// GOMAXPROCS from the CPUs it may use, as it did in the study.

import (
	"fmt"
	"log"
	"net/http"
	"runtime"
	"strconv"
	"time"
)

func studyMain(port, scenario string) {
	if w, err := strconv.Atoi(envOr("WORKERS", "")); err == nil && w > 0 {
		runtime.GOMAXPROCS(w)
	}
	switch scenario {
	case "static":
		http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintln(w, "Hello World!")
		})
	case "dynamic":
		http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintln(w, "The time is: "+time.Now().Format(time.RFC3339))
		})
	case "file":
		// The study had no file case; the shape serves it as `default` does.
		http.Handle("/hello-16k.txt", http.FileServer(http.Dir(mustEnv("FILES_DIR"))))
	default:
		log.Fatalf("unknown SCENARIO %q", scenario)
	}
	log.Printf("go-nethttp: %s/study on :%s, GOMAXPROCS=%d", scenario, port, runtime.GOMAXPROCS(0))
	log.Fatal(http.ListenAndServe(":"+port, nil))
}
