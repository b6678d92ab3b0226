# Everyday tasks; nothing requires just: each line is the plain command.

run:
    go run ./cmd/termhost

test:
    go test -race ./...

bench:
    go test -run '^$' -bench . -benchmem ./...

lint:
    gofmt -l . && go vet ./...
