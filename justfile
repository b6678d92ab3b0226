# Everyday tasks; nothing requires just: each line is the plain command.

run:
    go run ./cmd/termhost

test:
    go test -race ./...

bench:
    go test -run '^$' -bench . -benchmem ./...

# gofmt -l exits 0 even when it lists files: the list must be empty (it is shown on stderr).
lint:
    test -z "$(gofmt -l . | tee /dev/stderr)"
    go vet ./...
    GOOS=darwin go vet ./...
