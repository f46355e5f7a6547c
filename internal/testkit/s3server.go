package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/appruntime/appruntime/internal/freeport"
)

// VersityGWVersion is the versitygw release the S3 tests run against: a
// real S3 gateway (SigV4, range GETs, presigned URLs, listing) over a plain
// directory, the lightest real S3 server the module proxy provides (one
// binary, no cluster, starts in well under a second).
const VersityGWVersion = "v1.8.0"

// S3Server is a versitygw on loopback serving a temporary directory.
type S3Server struct {
	Endpoint  string // http://127.0.0.1:port
	AccessKey string
	SecretKey string
	Dir       string // the posix backend's root: one directory per bucket
}

var installOnce sync.Once
var installErr error
var installPath string

// VersityGWPath is where scripts/services.sh installs the pinned versitygw
// (and where NewS3Server installs it when it is missing):
// $APPRUNTIME_TOOLS or ~/.cache/appruntime-tools, then versitygw-<version>.
func VersityGWPath() string {
	base := os.Getenv("APPRUNTIME_TOOLS")
	if base == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		base = filepath.Join(cache, "appruntime-tools")
	}
	return filepath.Join(base, "versitygw-"+VersityGWVersion, "versitygw")
}

// NewS3Server starts versitygw on a free loopback port with fresh
// credentials and a temporary directory, stopped at cleanup. The binary is
// built with go install at VersityGWVersion when the cache lacks it; the
// test is skipped only when TEST_S3=skip says so, never because the server
// is missing.
func NewS3Server(t *testing.T) *S3Server {
	t.Helper()
	if os.Getenv("TEST_S3") == "skip" {
		t.Skip("TEST_S3=skip: the S3 tests against versitygw are turned off")
	}
	installOnce.Do(func() {
		installPath = VersityGWPath()
		if _, err := os.Stat(installPath); err == nil {
			return
		}
		cmd := exec.Command("go", "install", "github.com/versity/versitygw/cmd/versitygw@"+VersityGWVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+filepath.Dir(installPath))
		if out, err := cmd.CombinedOutput(); err != nil {
			installErr = fmt.Errorf("installing versitygw %s: %v\n%s", VersityGWVersion, err, out)
		}
	})
	if installErr != nil {
		t.Fatal(installErr)
	}
	s := &S3Server{AccessKey: "appruntime-test", SecretKey: "appruntime-test-secret-" + strconv.Itoa(os.Getpid()), Dir: t.TempDir()}
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(installPath, "--access", s.AccessKey, "--secret", s.SecretKey, "--port", addr, "posix", s.Dir)
	cmd.Stdout, cmd.Stderr = testWriter{t}, testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting versitygw: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitListening(t, "versitygw", addr, 15*time.Second)
	s.Endpoint = "http://" + addr
	return s
}

// MakeBucket creates a bucket (a directory of the posix backend).
func (s *S3Server) MakeBucket(t *testing.T, name string) {
	t.Helper()
	if err := os.Mkdir(filepath.Join(s.Dir, name), 0o700); err != nil {
		t.Fatal(err)
	}
}

// URL is a BLOB_URL for bucket/prefix on this server.
func (s *S3Server) URL(bucket, prefix string) string {
	return "s3://" + bucket + "/" + prefix + "?endpoint=" + s.Endpoint + "&region=us-east-1"
}

// testWriter sends a child process's output to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("versitygw: %s", p)
	return len(p), nil
}
