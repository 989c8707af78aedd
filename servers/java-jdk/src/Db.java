import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The json, db, queries, fortunes and updates routes (scenarios/NAME.toml,
 * TechEmpower's shapes), answered under every SCENARIO as the contract asks.
 *
 * <p>JDBC with the PostgreSQL driver behind a HikariCP pool of DB_POOL
 * connections, opened only when DATABASE_URL is set. JDBC blocks its thread,
 * so with a database the HttpServer's executor gets one thread per pooled
 * connection (at least CORES): fewer threads would leave connections idle.
 * The JDK has no JSON writer and no HTML escaper; the two small ones below
 * write only integers and the five characters HTML needs escaped.
 */
final class Db {
    private static final int WORLD_ROWS = 10000;
    private static final int MAX_QUERIES = 500;
    private static final String SELECT_WORLD = "SELECT id, randomnumber FROM world WHERE id = ?";
    private static final String SELECT_FORTUNES = "SELECT id, message FROM fortune";
    // One statement for the whole batch; ids are sorted so two concurrent
    // batches lock rows in the same order and cannot deadlock.
    private static final String UPDATE_WORLDS = "UPDATE world SET randomnumber = v.r FROM "
            + "(SELECT unnest(?::int[]) AS id, unnest(?::int[]) AS r) AS v WHERE world.id = v.id";
    private static final String ADDITIONAL_FORTUNE = "Additional fortune added at request time.";
    private static final String JSON = "application/json";
    private static final String HTML = "text/html; charset=utf-8";
    private static final byte[] HELLO = "{\"message\":\"Hello, World!\"}".getBytes(StandardCharsets.UTF_8);

    private static final String[] PATHS = {"/json", "/db", "/queries", "/fortunes", "/updates"};

    private final HikariDataSource pool;
    private final Map<String, HttpHandler> routes = new HashMap<>();

    private Db(HikariDataSource pool) {
        this.pool = pool;
        for (String path : PATHS) routes.put(path, handler(path));
    }

    /** json, db, queries, fortunes, updates, and their `ROUTE-DETAIL` variants (queries-1). */
    static boolean isStackScenario(String name) {
        return Set.of(PATHS).contains("/" + name.split("-", 2)[0]);
    }

    /** The pool's size from DB_POOL, or 0 when DATABASE_URL is not set. */
    static int poolSize() {
        if (System.getenv("DATABASE_URL") == null || System.getenv("DATABASE_URL").isEmpty()) return 0;
        String raw = System.getenv("DB_POOL");
        try {
            int n = raw == null ? 4 : Integer.parseInt(raw.trim());
            if (n >= 1) return n;
        } catch (NumberFormatException e) {
            // reported below
        }
        System.err.println("java-jdk: DB_POOL must be a positive integer, got " + raw);
        System.exit(1);
        return 0;
    }

    /** Handler threads: CORES, or one per pooled connection when there is a database. */
    static int threads(int cores) {
        return Math.max(cores, poolSize());
    }

    static Db open() {
        int size = poolSize();
        if (size == 0) return new Db(null);
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl(System.getenv("DATABASE_URL")));
        config.setMaximumPoolSize(size);
        // A fixed-size pool, every connection made before the server listens
        // (Hikari itself would fill up to minimumIdle in the background), so
        // connecting is not timed in a run.
        config.setMinimumIdle(size);
        config.setInitializationFailTimeout(10_000);
        HikariDataSource pool = null;
        try {
            pool = new HikariDataSource(config);
            List<Connection> held = new ArrayList<>();
            for (int i = 0; i < size; i++) held.add(pool.getConnection());
            for (Connection c : held) c.close();
        } catch (SQLException | RuntimeException e) {
            // Hikari's PoolInitializationException is a RuntimeException.
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            System.err.println("java-jdk: database: " + cause.getMessage());
            System.exit(1);
        }
        System.err.printf("java-jdk: HikariCP pool of %d connection(s)%n", size);
        return new Db(pool);
    }

    /**
     * postgres://USER:PASSWORD@HOST:PORT/DB as JDBC wants it:
     * jdbc:postgresql://HOST:PORT/DB?user=USER&password=PASSWORD.
     */
    static String jdbcUrl(String url) {
        URI uri = URI.create(url);
        String userInfo = uri.getRawUserInfo();
        StringBuilder jdbc = new StringBuilder("jdbc:postgresql://")
                .append(uri.getHost()).append(':').append(uri.getPort() < 0 ? 5432 : uri.getPort())
                .append(uri.getRawPath());
        if (userInfo != null) {
            int colon = userInfo.indexOf(':');
            jdbc.append("?user=").append(colon < 0 ? userInfo : userInfo.substring(0, colon));
            if (colon >= 0) jdbc.append("&password=").append(userInfo.substring(colon + 1));
        }
        return jdbc.toString();
    }

    /** The handler for one of the five paths, or null for any other. */
    HttpHandler route(String path) {
        return routes.get(path);
    }

    private HttpHandler handler(String path) {
        switch (path) {
            case "/json":
                return ex -> send(ex, 200, JSON, HELLO);
            case "/db":
                return withDb(ex -> {
                    Integer id = worldId(query(ex, "id"));
                    if (id == null) {
                        send(ex, 400, "text/plain; charset=utf-8",
                                "id must be an integer in 1..=10000".getBytes(StandardCharsets.UTF_8));
                        return;
                    }
                    int[][] rows = worlds(new int[] {id});
                    send(ex, 200, JSON, object(rows[0]).getBytes(StandardCharsets.UTF_8));
                });
            case "/queries":
                return withDb(ex -> sendRows(ex, worlds(randomIds(count(query(ex, "queries")), false))));
            case "/updates":
                return withDb(ex -> sendRows(ex, updates(count(query(ex, "queries")))));
            case "/fortunes":
                return withDb(ex -> send(ex, 200, HTML, fortunes().getBytes(StandardCharsets.UTF_8)));
            default:
                return null;
        }
    }

    private interface DbHandler {
        void handle(HttpExchange ex) throws IOException, SQLException;
    }

    private HttpHandler withDb(DbHandler handler) {
        return ex -> {
            if (pool == null) {
                send(ex, 500, "text/plain; charset=utf-8",
                        "DATABASE_URL is not set".getBytes(StandardCharsets.UTF_8));
                return;
            }
            try {
                handler.handle(ex);
            } catch (SQLException e) {
                System.err.println(ex.getRequestURI().getPath() + ": " + e.getMessage());
                send(ex, 500, "text/plain; charset=utf-8", "database error".getBytes(StandardCharsets.UTF_8));
            }
        };
    }

    /** One row per id, one query after another on one pooled connection. */
    private int[][] worlds(int[] ids) throws SQLException {
        int[][] rows = new int[ids.length][];
        try (Connection c = pool.getConnection(); PreparedStatement st = c.prepareStatement(SELECT_WORLD)) {
            for (int i = 0; i < ids.length; i++) {
                st.setInt(1, ids[i]);
                try (ResultSet rs = st.executeQuery()) {
                    if (!rs.next()) throw new SQLException("no world row " + ids[i]);
                    rows[i] = new int[] {rs.getInt(1), rs.getInt(2)};
                }
            }
        }
        return rows;
    }

    private int[][] updates(int n) throws SQLException {
        // Distinct ids: a row drawn twice would get two new numbers of which
        // only one could be stored, and the answer would not match the table.
        int[][] rows = worlds(randomIds(n, true));
        for (int[] row : rows) row[1] = randomId();
        int[][] sorted = rows.clone();
        Arrays.sort(sorted, Comparator.comparingInt(r -> r[0]));
        Integer[] ids = new Integer[n];
        Integer[] numbers = new Integer[n];
        for (int i = 0; i < n; i++) {
            ids[i] = sorted[i][0];
            numbers[i] = sorted[i][1];
        }
        try (Connection c = pool.getConnection(); PreparedStatement st = c.prepareStatement(UPDATE_WORLDS)) {
            Array idArray = c.createArrayOf("int4", ids);
            Array numberArray = c.createArrayOf("int4", numbers);
            st.setArray(1, idArray);
            st.setArray(2, numberArray);
            st.executeUpdate();
        }
        return rows;
    }

    private String fortunes() throws SQLException {
        List<Object[]> all = new ArrayList<>();
        try (Connection c = pool.getConnection();
                PreparedStatement st = c.prepareStatement(SELECT_FORTUNES);
                ResultSet rs = st.executeQuery()) {
            while (rs.next()) all.add(new Object[] {rs.getInt(1), rs.getString(2)});
        }
        all.add(new Object[] {0, ADDITIONAL_FORTUNE});
        all.sort(Comparator.comparing(f -> (String) f[1]));
        StringBuilder page = new StringBuilder(
                "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr>");
        for (Object[] f : all) {
            page.append("<tr><td>").append(f[0]).append("</td><td>");
            escape(page, (String) f[1]);
            page.append("</td></tr>");
        }
        return page.append("</table></body></html>").toString();
    }

    static void escape(StringBuilder out, String s) {
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            switch (ch) {
                case '&': out.append("&amp;"); break;
                case '<': out.append("&lt;"); break;
                case '>': out.append("&gt;"); break;
                case '"': out.append("&quot;"); break;
                case '\'': out.append("&#39;"); break;
                default: out.append(ch);
            }
        }
    }

    private static void sendRows(HttpExchange ex, int[][] rows) throws IOException {
        StringBuilder json = new StringBuilder(rows.length * 32).append('[');
        for (int i = 0; i < rows.length; i++) {
            if (i > 0) json.append(',');
            json.append(object(rows[i]));
        }
        send(ex, 200, JSON, json.append(']').toString().getBytes(StandardCharsets.UTF_8));
    }

    private static String object(int[] row) {
        return "{\"id\":" + row[0] + ",\"randomNumber\":" + row[1] + "}";
    }

    static void send(HttpExchange ex, int status, String type, byte[] body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", type);
        ex.sendResponseHeaders(status, body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    /** The value of key in the request's query string; ids and counts need no decoding. */
    private static String query(HttpExchange ex, String key) {
        String q = ex.getRequestURI().getRawQuery();
        if (q == null) return null;
        for (String pair : q.split("&")) {
            if (pair.startsWith(key + "=")) return pair.substring(key.length() + 1);
        }
        return null;
    }

    static Integer worldId(String raw) {
        if (raw == null || !raw.matches("[0-9]{1,9}")) return null;
        int id = Integer.parseInt(raw);
        return id >= 1 && id <= WORLD_ROWS ? id : null;
    }

    /** TechEmpower's rule: missing or not an integer is 1, clamped to 1..=500. */
    static int count(String raw) {
        try {
            return Math.max(1, Math.min(MAX_QUERIES, Integer.parseInt(raw)));
        } catch (NumberFormatException e) {
            return 1;
        }
    }

    private static int randomId() {
        return ThreadLocalRandom.current().nextInt(1, WORLD_ROWS + 1);
    }

    private static int[] randomIds(int n, boolean distinct) {
        int[] ids = new int[n];
        Set<Integer> seen = new HashSet<>();
        for (int i = 0; i < n; ) {
            int id = randomId();
            if (distinct && !seen.add(id)) continue;
            ids[i++] = id;
        }
        return ids;
    }
}
