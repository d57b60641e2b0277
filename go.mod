module github.com/openwop/temporal-mcp

go 1.26.8
