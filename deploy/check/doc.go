// Package check validates the deployment files under deploy/ and the
// Dockerfile without a Docker daemon: the Dockerfile parses and passes
// BuildKit's build checks (what `docker build --check` runs), the Compose
// file loads with the Compose specification's own loader, and
// cmd/k8sschema turns the Kubernetes OpenAPI document (from the
// k8s.io/kubernetes module) into the JSON schemas kubeconform validates the
// Helm chart's output against. It is a module of its own so that the
// product's go.mod does not carry these tools' dependencies.
package check
