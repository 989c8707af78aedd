module fairbench/servers/go-nethttp

go 1.26
