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

// The console's sign-in throttle. A client address may try
// SignInAddressBurst times, then once per SignInAddressEvery, over every
// account: it cannot spray one password over many accounts. One account may
// be tried from one address SignInAccountBurst times in a row, then once per
// SignInAccountEvery: guessing a password from there is hopeless. The tries
// of clients the account has not signed in from before also share the
// account's pool, SignInPoolBurst, then one per SignInPoolEvery, which bounds
// what many addresses guess together; one address at its own pace (one a
// minute) never empties the pool (two a minute), so one guesser cannot lock
// anyone out. A browser the account signed in from holds a device cookie
// (the console's), and its tries are its own budget (SignInAccountBurst,
// then one per SignInAccountEvery) instead of the address's and the pool's:
// however many addresses guess, and however many failures others spend at
// its own address (an office's NAT, a load balancer that is not a trusted
// proxy), the real admin signs in from a known browser as usual (the device
// cookies of OWASP's "slow down online guessing attacks").
const (
	SignInAddressBurst = 20
	SignInAddressEvery = 6 * time.Second
	SignInAccountBurst = 5
	SignInAccountEvery = time.Minute
	SignInPoolBurst    = 10
	SignInPoolEvery    = 30 * time.Second
)

// SignInThrottle limits console sign-in attempts per client address, per
// account and address, per account for unknown clients and per known
// device. Its state is a GCRA cell of each in Redis, shared by every console
// replica; it is safe for concurrent use.
type SignInThrottle struct {
	rl     *redis_rate.Limiter
	prefix string
}

// NewSignInThrottle returns the throttle whose keys start with keyPrefix.
func NewSignInThrottle(rc redis.UniversalClient, keyPrefix string) *SignInThrottle {
	return &SignInThrottle{rl: redis_rate.NewLimiter(keyspace{rc}), prefix: keyPrefix + "rate:signin:"}
}

var (
	signInPerAddress = redis_rate.Limit{Rate: 1, Period: SignInAddressEvery, Burst: SignInAddressBurst}
	signInPerAccount = redis_rate.Limit{Rate: 1, Period: SignInAccountEvery, Burst: SignInAccountBurst}
	signInPerPool    = redis_rate.Limit{Rate: 1, Period: SignInPoolEvery, Burst: SignInPoolBurst}
)

// SignInTry is one sign-in attempt: the account tried (an email, compared
// case-insensitively), the client's address, and the id of the device
// cookie the client holds for that account ("" when it holds none: an
// unknown client).
type SignInTry struct {
	Account, Address, Device string
}

// Attempt spends one try before the password is checked: a known device's
// own, or else the address's, the account's from this address and one of
// the account's pool. A refused cell spends nothing, and the cells
// after it are not asked. It returns nil, or a 429 (apperr.RateLimited)
// whose RetryAfter says when the next try passes; when Redis cannot be
// asked, a 503 rather than an unmetered try.
func (t *SignInThrottle) Attempt(ctx context.Context, try SignInTry) error {
	if try.Device != "" {
		return t.spend(ctx, t.deviceKey(try.Device), signInPerAccount)
	}
	if err := t.spend(ctx, t.prefix+"address:"+try.Address, signInPerAddress); err != nil {
		return err
	}
	if err := t.spend(ctx, t.fromKey(try.Account, try.Address), signInPerAccount); err != nil {
		return err
	}
	return t.spend(ctx, t.poolKey(try.Account), signInPerPool)
}

// Succeeded forgets the tries of the account from the try's address and of
// its device: a signed-in admin starts afresh there. The address's count
// and the account's pool are kept, so that signing in does not hand the
// tries of others back.
func (t *SignInThrottle) Succeeded(ctx context.Context, try SignInTry) error {
	keys := []string{t.fromKey(try.Account, try.Address)}
	if try.Device != "" {
		keys = append(keys, t.deviceKey(try.Device))
	}
	for _, k := range keys {
		if err := t.rl.Reset(ctx, k); err != nil {
			return apperr.Wrap(err, apperr.Unavailable, "sign-in throttle is unavailable; retry")
		}
	}
	return nil
}

// SignInAccount is how a sign-in names an account where it keeps it (the
// throttle's keys, a device cookie): a hash of the email, lowercased and
// trimmed, so that no email address is kept.
func SignInAccount(account string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(account))))
	return hex.EncodeToString(sum[:16])
}

func (t *SignInThrottle) fromKey(account, address string) string {
	return t.prefix + "account:" + SignInAccount(account) + ":" + address
}

func (t *SignInThrottle) poolKey(account string) string {
	return t.prefix + "pool:" + SignInAccount(account)
}

func (t *SignInThrottle) deviceKey(device string) string {
	sum := sha256.Sum256([]byte(device))
	return t.prefix + "device:" + hex.EncodeToString(sum[:16])
}

func (t *SignInThrottle) spend(ctx context.Context, key string, lim redis_rate.Limit) error {
	wait, err := spend(ctx, t.rl, key, lim, "sign-in throttle")
	if err != nil || wait == 0 {
		return err
	}
	return apperr.RateLimitedAfter(wait, "too many sign-in attempts")
}
