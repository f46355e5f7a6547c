package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/config"
)

func TestTracingIsOffUnlessAskedFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want config.Tracing
	}{
		{"unset", map[string]string{}, config.Tracing{Protocol: "http/protobuf", Sampler: "parentbased_always_on", SamplerArg: 1}},
		{"an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SERVICE_NAME": "api-eu"},
			config.Tracing{Enabled: true, Protocol: "http/protobuf", Sampler: "parentbased_always_on", SamplerArg: 1, ServiceName: "api-eu"}},
		{"the traces endpoint, grpc, a ratio", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"},
			config.Tracing{Enabled: true, Protocol: "grpc", Sampler: "parentbased_traceidratio", SamplerArg: 0.25}},
		{"exporter otlp alone", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, config.Tracing{Enabled: true, Protocol: "http/protobuf", Sampler: "parentbased_always_on", SamplerArg: 1}},
		{"exporter none wins", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
			config.Tracing{Protocol: "http/protobuf", Sampler: "parentbased_always_on", SamplerArg: 1}},
		{"sdk disabled wins", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
			config.Tracing{Protocol: "http/protobuf", Sampler: "parentbased_always_on", SamplerArg: 1}},
	} {
		c, err := config.Load(config.RoleDev, env(tc.env))
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, c.Tracing, tc.name)
	}
}

func TestTracingRefusesWhatTheSDKWouldQuietlyReplace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, value string }{
		{"OTEL_TRACES_EXPORTER", "zipkin"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://collector"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
		{"OTEL_TRACES_SAMPLER", "sometimes"},
		{"OTEL_SDK_DISABLED", "maybe"},
	} {
		_, err := config.Load(config.RoleDev, env(map[string]string{tc.name: tc.value}))
		require.ErrorContains(t, err, tc.name, "%s=%s", tc.name, tc.value)
	}
	for _, arg := range []string{"1.5", "-0.1", "half"} {
		_, err := config.Load(config.RoleDev, env(map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": arg}))
		require.ErrorContains(t, err, "OTEL_TRACES_SAMPLER_ARG", arg)
	}
}
