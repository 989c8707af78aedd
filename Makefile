# The two commands of the README. Both work on a fresh machine of this
# project's kind: they install what they need first.

.PHONY: quick test lint bench bench-tls

# The main job: build fairbench, list the servers and their toolchains, run
# the quick suite over every server whose toolchain is present, write the
# report.
quick:
	cargo build --release -p fairbench
	./target/release/fairbench servers
	./target/release/fairbench run --suite quick --report report.html

# Every test: Rust (unit, integration, end-to-end against real servers), the
# Dart sources' syntax and manifests (Python + tree-sitter), lint.
test:
	bash scripts/test.sh

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

# fairbench against wrk on nginx (see bench/loadgen.sh).
bench:
	bash bench/loadgen.sh

# fairbench's CPU per request over https:// against http:// on nginx (see bench/tls.sh).
bench-tls:
	bash bench/tls.sh
