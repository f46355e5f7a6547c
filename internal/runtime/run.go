package runtime

import (
	"context"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/session"
)

// Run runs a `tools` op. No tool executor is wired into this deployment yet
// (python sandbox, lookup broker, translation, extraction), so a granted op
// answers 501 as seed 000 prescribes for a tool whose backing service the
// deployment lacks; an op the binding does not grant is 403.
func (s *Service) Run(ctx context.Context, c session.Claims, body []byte) (Result, error) {
	r, err := ParseRequest(body)
	if err != nil {
		return Result{}, err
	}
	b, err := s.binding(ctx, c)
	if err != nil {
		return Result{}, err
	}
	op, ok := b.Tool(r.Op)
	if !ok {
		return Result{}, opNotAllowed("run", r.Op)
	}
	var params map[string]any
	if err := decodePayload(r.Payload, &params); err != nil {
		return Result{}, err
	}
	if err := s.Limiter.Allow(ctx, c.Surface()); err != nil {
		return Result{}, err
	}
	return Result{}, apperr.NotImplementedf("this deployment has no executor for tool %q", op.Tool)
}

// Capability serves a platform feature on the session's own task. Host
// capabilities are performed by the browser and refused here (400); one the
// binding does not grant is 403; one this deployment does not serve is 501.
func (s *Service) Capability(ctx context.Context, c session.Claims, body []byte) (Result, error) {
	r, err := ParseRequest(body)
	if err != nil {
		return Result{}, err
	}
	b, err := s.binding(ctx, c)
	if err != nil {
		return Result{}, err
	}
	capability, known := binding.LookupCapability(r.Op)
	if !known {
		return Result{}, apperr.Forbiddenf("capability %q is not granted by this binding", r.Op)
	}
	if capability.Host {
		return Result{}, apperr.Invalidf("%s is performed by the host over bridge messages, not by /capability", r.Op)
	}
	if !b.Grants(r.Op) {
		return Result{}, apperr.Forbiddenf("capability %q is not granted by this binding", r.Op)
	}
	if s.Capabilities == nil || s.Served == nil || !s.Served(r.Op) {
		return Result{}, apperr.NotImplementedf("this deployment does not serve capability %q", r.Op)
	}
	out, err := s.Capabilities.Call(ctx, c.TaskID, r.Op, r.Payload)
	if err != nil {
		return Result{}, err
	}
	return Result{Kind: r.Op, Body: map[string]any{"result": out}, Result: out}, nil
}
