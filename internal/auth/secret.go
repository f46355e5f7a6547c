package auth

import (
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
)

// MinChosenSecretLength is how many characters a caller-chosen token secret
// carries after its scope prefix at least: as many as a generated one
// (32 random bytes, base64url), so a chosen secret is no easier to guess.
const MinChosenSecretLength = 43

// CheckTokenSecret checks that a secret the caller chose (StoreToken) has
// the form Verify accepts for scope: the scope's prefix, then at least
// MinChosenSecretLength characters.
func CheckTokenSecret(secret, scope string) error {
	prefix, ok := tokenPrefix[scope]
	if !ok {
		return apperr.Invalidf("scope must be host, agent or admin")
	}
	if !strings.HasPrefix(secret, prefix) || len(secret)-len(prefix) < MinChosenSecretLength {
		return apperr.Invalidf("a %s token secret must start with %s and carry at least %d more characters", scope, prefix, MinChosenSecretLength)
	}
	return nil
}
