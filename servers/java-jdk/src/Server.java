import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.Executors;
import java.util.zip.GZIPOutputStream;

/**
 * The JDK's built-in com.sun.net.httpserver.HttpServer, no dependencies.
 *
 * <p>HttpServer sends only what the handler sets plus Date and Content-length,
 * so for static and dynamic a plain handler already has Go's shape; only the
 * dynamic body's time format differs between the two responses.
 */
public final class Server {
    private static final String TEXT = "text/plain; charset=utf-8";

    public static void main(String[] args) throws IOException {
        int port = Integer.parseInt(env("PORT"));
        String scenario = env("SCENARIO");
        boolean normalized = "normalized".equals(System.getenv("RESPONSE"));
        int cores = Math.max(1, parseOr(System.getenv("CORES"), 1));

        String path;
        HttpHandler handler;
        switch (scenario) {
            case "static": {
                byte[] body = "Hello World!\n".getBytes(StandardCharsets.UTF_8);
                path = "/";
                handler = ex -> send(ex, body);
                break;
            }
            case "dynamic":
                path = "/";
                handler = ex -> {
                    // Instant.toString is ISO-8601 UTC; it prints up to
                    // nanoseconds, Go prints seconds (33-byte body).
                    Instant now = Instant.now();
                    if (normalized) now = now.truncatedTo(ChronoUnit.SECONDS);
                    send(ex, ("The time is " + now + "\n").getBytes(StandardCharsets.UTF_8));
                };
                break;
            case "file": {
                // JDK 17 has no static-file facility (SimpleFileServer came in
                // 18), so the handler streams the file from disk per request.
                Path file = Path.of(env("FILES_DIR"), "hello-16k.txt");
                path = "/hello-16k.txt";
                handler = ex -> {
                    ex.getResponseHeaders().set("Content-Type", TEXT);
                    // A known length keeps HttpServer from chunking (length 0).
                    ex.sendResponseHeaders(200, Files.size(file));
                    try (OutputStream out = ex.getResponseBody()) {
                        Files.copy(file, out);
                    }
                };
                break;
            }
            case "gzip": {
                // Read once; compressed anew per request that accepts gzip by
                // GZIPOutputStream (Deflater's default level, 6) into a buffer,
                // so the length is known and HttpServer does not chunk.
                byte[] text = Files.readAllBytes(Path.of(env("FILES_DIR"), "gzip-text.txt"));
                path = "/gzip";
                handler = ex -> {
                    String accept = ex.getRequestHeaders().getFirst("Accept-Encoding");
                    ex.getResponseHeaders().set("Vary", "Accept-Encoding");
                    if (accept == null || !accept.contains("gzip")) {
                        send(ex, text);
                        return;
                    }
                    ByteArrayOutputStream buf = new ByteArrayOutputStream(text.length);
                    try (GZIPOutputStream gz = new GZIPOutputStream(buf)) {
                        gz.write(text);
                    }
                    ex.getResponseHeaders().set("Content-Encoding", "gzip");
                    send(ex, buf.toByteArray());
                };
                break;
            }
            default:
                // json, db, queries, ...: Db.java answers them, under every scenario.
                if (!Db.isStackScenario(scenario)) {
                    throw new IllegalArgumentException("unknown SCENARIO " + scenario);
                }
                path = null;
                handler = null;
        }

        // The wildcard address: Java opens it as a dual-stack IPv6 socket, so
        // 127.0.0.1 and ::1 both answer. Backlog 0 would mean the JDK's 50,
        // which overflows when a load generator opens hundreds of connections
        // at once; 1024 is tokio's default, near Go's somaxconn.
        // HttpServer writes the headers and the body of a response in two
        // writes; with Nagle on, a small body then waits for the client's
        // delayed ACK (~40 ms a request). Go, Node and the others disable
        // Nagle, so this must be set before the server class reads it.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        // Past 200 idle keep-alive connections (the JDK default) HttpServer
        // closes the surplus silently, so a load generator with more
        // connections than that sees resets instead of a slower server.
        System.setProperty("sun.net.httpserver.maxIdleConnections", "100000");
        // The database pool (if any) is open before the port is bound: a
        // server that accepted before it could reach its database would fail
        // its first requests.
        Db db = Db.open();
        HttpServer server = HttpServer.create(new InetSocketAddress(port), 1024);
        server.createContext("/", exact(path, handler, db));
        server.setExecutor(Executors.newFixedThreadPool(Db.threads(cores)));
        server.start();
        System.err.printf("java-jdk: %s/%s on :%d, %d handler thread(s)%n",
                scenario, System.getenv("RESPONSE"), port, Db.threads(cores));
    }

    private static void send(HttpExchange ex, byte[] body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", TEXT);
        ex.sendResponseHeaders(200, body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    /** Contexts match by prefix; the scenario wants its one path only. */
    private static HttpHandler exact(String path, HttpHandler handler, Db db) {
        return ex -> {
            HttpHandler stack = "GET".equals(ex.getRequestMethod()) ? db.route(ex.getRequestURI().getPath()) : null;
            if (stack != null) {
                stack.handle(ex);
            } else if ("GET".equals(ex.getRequestMethod()) && path != null && path.equals(ex.getRequestURI().getPath())) {
                handler.handle(ex);
            } else {
                ex.sendResponseHeaders(404, -1);
                ex.close();
            }
        };
    }

    private static String env(String key) {
        String v = System.getenv(key);
        if (v == null || v.isEmpty()) {
            System.err.println("java-jdk: " + key + " is not set");
            System.exit(1);
        }
        return v;
    }

    private static int parseOr(String s, int fallback) {
        try {
            return s == null ? fallback : Integer.parseInt(s.trim());
        } catch (NumberFormatException e) {
            return fallback;
        }
    }
}
