package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/internal/tracing"
)

// tracingFlushBudget bounds how long a stopping process waits for its last
// spans to reach the collector.
const tracingFlushBudget = 5 * time.Second

// startTracing turns traces on when cfg.Tracing asks for them
// (docs/deploy.md#turn-traces-on), as service appruntime-<role> unless
// OTEL_SERVICE_NAME names another. stop flushes the spans still buffered;
// with tracing off both do nothing.
func startTracing(ctx context.Context, cfg *config.Config, role config.Role, log *slog.Logger) (stop func(), err error) {
	t := cfg.Tracing
	if !t.Enabled {
		return func() {}, nil
	}
	service := t.ServiceName
	if service == "" {
		service = "appruntime-" + string(role)
	}
	shutdown, err := tracing.Setup(ctx, tracing.Options{
		Protocol: t.Protocol, Sampler: t.Sampler, SamplerArg: t.SamplerArg,
		ServiceName: service, RequestIDFunc: requestid.From,
	})
	if err != nil {
		return nil, err
	}
	log.Info("tracing on", "service", service, "protocol", t.Protocol, "sampler", t.Sampler, "sampler_arg", t.SamplerArg)
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingFlushBudget)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("tracing: flush at shutdown", "error", err.Error())
		}
	}, nil
}
