package webhook_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/appruntime/appruntime/internal/webhook"
)

// Signing one delivery attempt, on the specification's own test vector. The
// resume webhook's sender (internal/review) calls Sign the same way with the
// agent's keyring, the event id and the attempt's time; in the transition
// release it also keeps its X-Appruntime-Signature, HMAC'd with
// keyring.Current.Key() at the same timestamp (docs/agent-platforms.md#webhooks-standard-webhooks).
func ExampleKeyring_Sign() {
	secret, err := webhook.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		panic(err)
	}
	k := webhook.Keyring{Current: secret}
	h := http.Header{}
	if err := k.Sign(h, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`)); err != nil {
		panic(err)
	}
	fmt.Println(h.Get(webhook.HeaderID))
	fmt.Println(h.Get(webhook.HeaderTimestamp))
	fmt.Println(h.Get(webhook.HeaderSignature))
	// Output:
	// msg_p5jXN8AQM9LWM0D4loKWxJek
	// 1614265330
	// v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
}
