package limit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/apperr"
)

// The console's sign-in throttle. An account may be tried SignInAccountBurst
// times in a row, then once per SignInAccountEvery: guessing a password is
// hopeless, and the real admin, after a burst of someone else's tries, waits
// a minute at most. A client address may try SignInAddressBurst times, then
// once per SignInAddressEvery, over every account: it cannot spray one
// password over many accounts either.
const (
	SignInAccountBurst = 5
	SignInAccountEvery = time.Minute
	SignInAddressBurst = 20
	SignInAddressEvery = 6 * time.Second
)

// SignInThrottle limits console sign-in attempts per account and per client
// address. Its state is a GCRA cell per account and per address in Redis,
// shared by every console replica; it is safe for concurrent use.
type SignInThrottle struct {
	rl      *redis_rate.Limiter
	account string // key prefixes
	address string
}

// NewSignInThrottle returns the throttle whose keys start with keyPrefix.
func NewSignInThrottle(rc redis.UniversalClient, keyPrefix string) *SignInThrottle {
	return &SignInThrottle{
		rl:      redis_rate.NewLimiter(keyspace{rc}),
		account: keyPrefix + "rate:signin:account:",
		address: keyPrefix + "rate:signin:address:",
	}
}

var (
	signInPerAccount = redis_rate.Limit{Rate: 1, Period: SignInAccountEvery, Burst: SignInAccountBurst}
	signInPerAddress = redis_rate.Limit{Rate: 1, Period: SignInAddressEvery, Burst: SignInAddressBurst}
)

// Attempt spends one try of address and one of account (an email, compared
// case-insensitively) before the password is checked. It returns nil, or a
// 429 (apperr.RateLimited) whose RetryAfter says when the next try passes;
// when Redis cannot be asked, a 503 rather than an unmetered try.
func (t *SignInThrottle) Attempt(ctx context.Context, account, address string) error {
	if err := t.spend(ctx, t.address+address, signInPerAddress); err != nil {
		return err
	}
	return t.spend(ctx, t.accountKey(account), signInPerAccount)
}

// Succeeded forgets the account's tries: a signed-in admin starts afresh.
// The address keeps its count.
func (t *SignInThrottle) Succeeded(ctx context.Context, account string) error {
	if err := t.rl.Reset(ctx, t.accountKey(account)); err != nil {
		return apperr.Wrap(err, apperr.Unavailable, "sign-in throttle is unavailable; retry")
	}
	return nil
}

// accountKey names an account's cell by a hash of its email, so that no
// email address is kept in Redis.
func (t *SignInThrottle) accountKey(account string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(account))))
	return t.account + hex.EncodeToString(sum[:16])
}

func (t *SignInThrottle) spend(ctx context.Context, key string, lim redis_rate.Limit) error {
	wait, err := spend(ctx, t.rl, key, lim, "sign-in throttle")
	if err != nil || wait == 0 {
		return err
	}
	return apperr.RateLimitedAfter(wait, "too many sign-in attempts")
}
