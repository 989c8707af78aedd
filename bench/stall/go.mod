module fairbench/bench/stall

go 1.21
