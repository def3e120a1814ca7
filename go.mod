module github.com/llm-d-incubation/wva

go 1.26
