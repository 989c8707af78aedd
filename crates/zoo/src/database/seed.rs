//! The tables every server reads, the same on every run: `world` (10,000
//! rows, TechEmpower's shape) with values drawn from a fixed seed, and
//! `fortune` (TechEmpower's 12 messages, one with HTML in it, one in
//! Japanese).

/// Rows of `world`: ids 1..=WORLD_ROWS.
pub const WORLD_ROWS: u32 = 10_000;

/// The fortune every server adds at request time (id 0).
pub const ADDED_FORTUNE: &str = "Additional fortune added at request time.";

/// TechEmpower's fortunes, by id.
pub const FORTUNES: [(i32, &str); 12] = [
    (1, "fortune: No such file or directory"),
    (
        2,
        "A computer scientist is someone who fixes things that aren't broken.",
    ),
    (3, "After enough decimal places, nobody gives a damn."),
    (
        4,
        "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1",
    ),
    (
        5,
        "A computer program does what you tell it to do, not what you want it to do.",
    ),
    (
        6,
        "Emacs is a nice operating system, but I prefer UNIX. — Tom Christaensen",
    ),
    (7, "Any program that runs right is obsolete."),
    (
        8,
        "A list is only as strong as its weakest link. — Donald Knuth",
    ),
    (9, "Feature: A bug with seniority."),
    (10, "Computers make very fast, very accurate mistakes."),
    (
        11,
        "<script>alert(\"This should not be displayed in a browser alert box.\");</script>",
    ),
    (12, "フレームワークのベンチマーク"),
];

/// `world.randomnumber` of `id` as seeded: 1..=10000, from SplitMix64 of
/// the id, so that every run starts from the same table.
pub fn world_value(id: u32) -> i32 {
    let mut z = (id as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z % 10_000) as i32 + 1
}

/// A SQL literal: single quotes doubled.
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The script (psql, connected to `fairbench` as the superuser) that
/// creates and fills the tables and lets `user` read and write them.
pub fn tables_script(user: &str) -> String {
    let mut s = String::with_capacity(200_000);
    s.push_str("\\set ON_ERROR_STOP 1\n");
    s.push_str(
        "CREATE TABLE world (id integer PRIMARY KEY, randomnumber integer NOT NULL);\n\
         CREATE TABLE fortune (id integer PRIMARY KEY, message varchar(2048) NOT NULL);\n",
    );
    s.push_str("COPY world (id, randomnumber) FROM STDIN;\n");
    for id in 1..=WORLD_ROWS {
        s.push_str(&format!("{id}\t{}\n", world_value(id)));
    }
    s.push_str("\\.\n");
    for (id, m) in FORTUNES {
        s.push_str(&format!(
            "INSERT INTO fortune (id, message) VALUES ({id}, {});\n",
            literal(m)
        ));
    }
    s.push_str(&format!(
        "GRANT SELECT, UPDATE ON world TO {user};\nGRANT SELECT ON fortune TO {user};\nANALYZE;\n"
    ));
    s
}

/// The script (as [`tables_script`]) that puts both tables back as they
/// were seeded, whatever a server did to them since: an `updates` case
/// rewrites rows and leaves dead row versions for the next case to read
/// around, and a faulty server could change or drop a table. Dropped and
/// made anew, they are the same for every case. A lock a server's backend
/// still holds fails the reset rather than hanging it.
pub fn reset_script(user: &str) -> String {
    tables_script(user).replacen(
        "\\set ON_ERROR_STOP 1\n",
        "\\set ON_ERROR_STOP 1\nSET lock_timeout = '10s';\nDROP TABLE IF EXISTS world, fortune;\n",
        1,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_fixed_and_spread() {
        // Pinned: every run, on every machine, seeds this same table; a
        // change here changes what every server is asked to read.
        let pinned: Vec<i32> = [1, 2, 3, 5000, 10_000].map(world_value).to_vec();
        assert_eq!(pinned, [2466, 8111, 9054, 7259, 9821]);
        let vals: Vec<i32> = (1..=WORLD_ROWS).map(world_value).collect();
        assert!(vals.iter().all(|v| (1..=10_000).contains(v)));
        let distinct: std::collections::BTreeSet<_> = vals.iter().collect();
        // Random draws of 10,000 from 10,000 leave about 1 − 1/e distinct.
        assert!(
            distinct.len() > 5_500 && distinct.len() < 7_000,
            "{}",
            distinct.len()
        );
    }

    #[test]
    fn quotes_are_doubled() {
        let s = tables_script("fairbench");
        assert!(
            s.contains("'A computer scientist is someone who fixes things that aren''t broken.'")
        );
        assert_eq!(s.matches("INSERT INTO fortune").count(), 12);
    }

    #[test]
    fn the_reset_drops_both_tables_then_seeds_them_as_at_the_start() {
        let (seed, reset) = (tables_script("fairbench"), reset_script("fairbench"));
        let drop = reset.find("DROP TABLE IF EXISTS world, fortune;").unwrap();
        assert!(drop < reset.find("CREATE TABLE world").unwrap());
        assert!(reset.starts_with("\\set ON_ERROR_STOP 1\n"));
        assert!(reset.ends_with(&seed["\\set ON_ERROR_STOP 1\n".len()..]));
    }
}
