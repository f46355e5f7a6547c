// Package artifact turns an app-tool step into what a host mounts: it mints
// the step's session and returns the complete live descriptor of seed 000
// ("What the mint returns"), read afresh from the configured tool, bundle,
// binding and await on every mint so that an admin's change applies on the
// next mount.
package artifact
