// A server that stalls on purpose, for bench/wrk_agreement.sh: it answers
// the study's 13-byte body at once, except every STALL_EVERY-th request
// (counted over all connections), which it holds for STALL_MS first. With
// a closed loop that stall is where wrk's own latency correction
// (stats_correct) adds its synthetic samples, so the two tools' figures
// are compared where the correction matters. Listens on 127.0.0.1:PORT.
package main

import (
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

func env(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func main() {
	every := uint64(env("STALL_EVERY", 200))
	stall := time.Duration(env("STALL_MS", 100)) * time.Millisecond
	var n atomic.Uint64
	body := []byte("Hello World!\n")
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%every == 0 {
			time.Sleep(stall)
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write(body)
	})
	addr := "127.0.0.1:" + strconv.Itoa(env("PORT", 8080))
	if err := http.ListenAndServe(addr, nil); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
}
