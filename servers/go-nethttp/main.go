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
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/quic-go/quic-go/http3"
)

func main() {
	// UNIX_SOCKET: a path to listen on instead of PORT (fairbench's
	// address_family = "unix"); absent, PORT as always.
	socket := os.Getenv("UNIX_SOCKET")
	port := ""
	if socket == "" {
		port = mustEnv("PORT")
	}
	scenario := mustEnv("SCENARIO")
	response := envOr("RESPONSE", "default")
	protocol := envOr("PROTOCOL", "http/1.1")
	if response == "study" {
		if protocol != "http/1.1" {
			log.Fatalf("the study's code (RESPONSE=study) serves HTTP/1.1 only, as published; PROTOCOL=%s", protocol)
		}
		if socket != "" {
			log.Fatalf("the study's code (RESPONSE=study) listens on PORT only, as published; UNIX_SOCKET=%s", socket)
		}
		studyMain(port, scenario)
		return
	}

	// Go already sizes GOMAXPROCS from the CPU affinity mask, but fairbench's
	// contract is "use exactly CORES", so it is not left to inference; a
	// suite's WORKERS (the study's GOMAXPROCS(1) on all CPUs) wins over it.
	procs := envOr("WORKERS", "")
	if procs == "" {
		procs = envOr("CORES", "1")
	}
	if n, err := strconv.Atoi(procs); err == nil && n > 0 {
		runtime.GOMAXPROCS(n)
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
	on := ":" + port
	if socket != "" {
		on = socket
	}
	log.Printf("go-nethttp: %s/%s over %s on %s, GOMAXPROCS=%d", scenario, response, protocol, on, runtime.GOMAXPROCS(0))
	log.Fatal(serve(&http.Server{Addr: ":" + port, Handler: mux}, protocol, socket))
}

// serve listens for PROTOCOL: HTTP/1.1 as ListenAndServe does; h2c (HTTP/2
// with prior knowledge, Go 1.24's Server.Protocols) beside HTTP/1.1 on the
// same port; h2 over TLS with the run's certificate, chosen by ALPN; h3
// with quic-go's http3.Server on the UDP port PORT (no TCP listener). The
// listener is ListenAndServe's (net.Listen "tcp" on Addr), or the unix
// socket when one is given.
func serve(srv *http.Server, protocol, socket string) error {
	var p http.Protocols
	switch protocol {
	case "h3":
		if socket != "" {
			return fmt.Errorf("PROTOCOL=h3 runs over UDP, not a unix socket")
		}
		h3 := &http3.Server{Addr: srv.Addr, Handler: srv.Handler}
		return h3.ListenAndServeTLS(mustEnv("TLS_CERT"), mustEnv("TLS_KEY"))
	case "http/1.1":
	case "h2c":
		p.SetHTTP1(true)
		p.SetUnencryptedHTTP2(true)
		srv.Protocols = &p
	case "h2":
		p.SetHTTP1(true)
		p.SetHTTP2(true)
		srv.Protocols = &p
	default:
		return fmt.Errorf("unknown PROTOCOL %q: expected http/1.1, h2c, h2 or h3", protocol)
	}
	ln, err := listen(srv.Addr, socket)
	if err != nil {
		return err
	}
	if protocol == "h2" {
		return srv.ServeTLS(ln, mustEnv("TLS_CERT"), mustEnv("TLS_KEY"))
	}
	return srv.Serve(ln)
}

// listen opens the TCP address, or the unix socket `socket` when given: a
// socket file left by a killed server would make Listen fail, so it goes.
func listen(addr, socket string) (net.Listener, error) {
	if socket == "" {
		return net.Listen("tcp", addr)
	}
	if err := os.Remove(socket); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return net.Listen("unix", socket)
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
