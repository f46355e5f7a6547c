// Package sdk is the bundle SDK's npm package, @appruntime/sdk: appruntime.js
// (JavaScript with JSDoc types, checked by tsc) is its one source, and
// appruntime.d.ts the declarations tsc generates from it. This Go file only
// embeds that source, so that internal/sdk serves at /sdk/appruntime.js the
// very bytes the package publishes
// (docs/bundle-authors.md#the-sdk-as-an-npm-package). It imports nothing.
package sdk

import (
	"bytes"
	_ "embed"
)

//go:embed appruntime.js
var source []byte

// Source returns a copy of appruntime.js.
func Source() []byte { return bytes.Clone(source) }
