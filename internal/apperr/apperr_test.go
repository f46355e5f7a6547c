package apperr_test

import (
	"net/http"
	"testing"

	"github.com/appruntime/appruntime/internal/apperr"
)

// TestInvalidBlocksStatus: a refused reply is a 400, and a bare 400 from the
// framework is always the general invalid code, never invalid_blocks.
func TestInvalidBlocksStatus(t *testing.T) {
	t.Parallel()
	if got := apperr.Status(apperr.InvalidBlocks); got != http.StatusBadRequest {
		t.Fatalf("Status(invalid_blocks) = %d, want 400", got)
	}
	code, status, _ := apperr.Public(apperr.New(apperr.InvalidBlocks, "blocks[0]: bad"))
	if code != apperr.InvalidBlocks || status != http.StatusBadRequest {
		t.Fatalf("Public = %s %d", code, status)
	}
	for range 200 { // the table is a map: every iteration order must agree
		if got := apperr.CodeForStatus(http.StatusBadRequest); got != apperr.Invalid {
			t.Fatalf("CodeForStatus(400) = %s, want invalid", got)
		}
	}
}
