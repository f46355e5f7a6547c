package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Tracing is the OpenTelemetry trace settings, read from the standard OTEL_*
// variables (docs/deploy.md#turn-traces-on). Traces are off unless an OTLP
// endpoint is named or OTEL_TRACES_EXPORTER=otlp asks for them; the
// exporter itself also reads the OTEL_EXPORTER_OTLP_* variables it knows
// (headers, timeout, certificates, compression).
type Tracing struct {
	Enabled bool
	// Protocol is the OTLP transport: "http/protobuf" (the default) or "grpc".
	Protocol string
	// Sampler is an OTEL_TRACES_SAMPLER value; SamplerArg the ratio of the
	// traceidratio samplers, in [0, 1].
	Sampler    string
	SamplerArg float64
	// ServiceName is OTEL_SERVICE_NAME; empty: appruntime-<role>.
	ServiceName string
}

// Samplers are the OTEL_TRACES_SAMPLER values understood.
var Samplers = []string{"always_on", "always_off", "traceidratio",
	"parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"}

// tracing reads Tracing. A value the SDK would quietly replace by its
// default is refused here, naming the variable.
func (r *reader) tracing() Tracing {
	t := Tracing{Protocol: "http/protobuf", Sampler: "parentbased_always_on", SamplerArg: 1,
		ServiceName: strings.TrimSpace(r.getenv("OTEL_SERVICE_NAME"))}
	endpointVar := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	endpoint := strings.TrimSpace(r.getenv(endpointVar))
	if endpoint == "" {
		endpointVar = "OTEL_EXPORTER_OTLP_ENDPOINT"
		endpoint = strings.TrimSpace(r.getenv(endpointVar))
	}
	if endpoint != "" {
		if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			r.fail(endpointVar, fmt.Sprintf("want an http(s) URL such as http://collector:4318, got %q", endpoint))
		}
	}
	switch exporter := strings.ToLower(strings.TrimSpace(r.getenv("OTEL_TRACES_EXPORTER"))); exporter {
	case "":
		t.Enabled = endpoint != ""
	case "otlp":
		t.Enabled = true
	case "none":
	default:
		r.fail("OTEL_TRACES_EXPORTER", fmt.Sprintf(`want "otlp" or "none", got %q`, exporter))
	}
	protocolVar := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	protocol := strings.TrimSpace(r.getenv(protocolVar))
	if protocol == "" {
		protocolVar = "OTEL_EXPORTER_OTLP_PROTOCOL"
		protocol = strings.TrimSpace(r.getenv(protocolVar))
	}
	switch protocol {
	case "":
	case "http/protobuf", "grpc":
		t.Protocol = protocol
	default:
		r.fail(protocolVar, fmt.Sprintf(`want "http/protobuf" or "grpc", got %q`, protocol))
	}
	if s := strings.ToLower(strings.TrimSpace(r.getenv("OTEL_TRACES_SAMPLER"))); s != "" {
		known := false
		for _, k := range Samplers {
			known = known || s == k
		}
		if !known {
			r.fail("OTEL_TRACES_SAMPLER", fmt.Sprintf("want one of %s, got %q", strings.Join(Samplers, ", "), s))
		}
		t.Sampler = s
	}
	if a := strings.TrimSpace(r.getenv("OTEL_TRACES_SAMPLER_ARG")); a != "" && strings.HasSuffix(t.Sampler, "traceidratio") {
		v, err := strconv.ParseFloat(a, 64)
		if err != nil || v < 0 || v > 1 {
			r.fail("OTEL_TRACES_SAMPLER_ARG", fmt.Sprintf("want a ratio from 0 to 1, got %q", a))
		}
		t.SamplerArg = v
	}
	if r.bool("OTEL_SDK_DISABLED") {
		t.Enabled = false
	}
	return t
}
