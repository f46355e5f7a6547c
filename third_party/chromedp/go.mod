module github.com/chromedp/chromedp

go 1.25

require github.com/chromedp/cdproto v0.160.1

require github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
