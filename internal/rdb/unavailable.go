package rdb

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/apperr"
)

// IsUnavailable reports whether err says Redis cannot serve right now
// rather than that the command was wrong: the connection failed or broke,
// the pool is exhausted, or the server is mid-failover (READONLY on a
// demoted master, NOREPLICAS, LOADING, MASTERDOWN, CLUSTERDOWN, TRYAGAIN, no master
// known to the Sentinels, a Cluster's MOVED or ASK past the client's
// redirects while its slots move). Such errors are worth retrying shortly, so the
// caller sees 503 with Retry-After, never 500
// (docs/operators.md#redis-sentinel-and-cluster).
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	msg := err.Error()
	for _, prefix := range []string{"READONLY ", "LOADING ", "MASTERDOWN ", "CLUSTERDOWN ", "TRYAGAIN ", "NOREPLICAS ", "MOVED ", "ASK ", "redis: connection pool timeout"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return strings.Contains(msg, "redis: all sentinels") || strings.Contains(msg, "master is down") ||
		strings.Contains(msg, "no good replica") || strings.Contains(msg, "redis: connection refused") || strings.Contains(msg, "redis: cluster has no nodes")
}

// availabilityHook turns every command's availability error into
// apperr.Unavailable (keeping the cause in the chain), so that whatever
// wraps it further up renders a 503 with Retry-After. On a Cluster client
// it also calls unavailable, which reloads the slot map: the node that
// failed may have been replaced by its replica.
type availabilityHook struct {
	unavailable func()
}

// failed is err as the hook returns it, and whether that is a new error.
func (h availabilityHook) failed(err error) (error, bool) {
	if !IsUnavailable(err) {
		return err, false
	}
	if h.unavailable != nil {
		h.unavailable()
	}
	if apperr.Is(err, apperr.Unavailable) {
		return err, false
	}
	return unavailable(err), true
}

func (availabilityHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h availabilityHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err, wrapped := h.failed(next(ctx, cmd))
		if wrapped {
			cmd.SetErr(err)
		}
		return err
	}
}

func (h availabilityHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err, _ := h.failed(next(ctx, cmds))
		return err
	}
}
