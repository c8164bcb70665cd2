module boxmaker

go 1.26.0

require (
	github.com/go-json-experiment/json v1.27.2
	github.com/pelletier/go-toml/v2 v2.4.3
)
