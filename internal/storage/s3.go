package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/appruntime/appruntime/internal/apperr"
)

// S3 stores blobs as objects in an S3-compatible bucket (AWS S3, MinIO,
// SeaweedFS, versitygw, R2), one object per key under an optional prefix.
// It is for deployments of several machines that want blobs out of the
// database without a shared volume. The client is minio-go: one module with
// no transitive SDK tree, speaking SigV4, path-style addressing for a custom
// endpoint, range GETs and presigning; see docs/deploy.md#choose-a-blob-store.
type S3 struct {
	client *minio.Client
	bucket string
	prefix string // "" or ending in "/"
}

// S3Config names a bucket and how to reach it; ParseS3URL reads it from a
// BLOB_URL.
type S3Config struct {
	Bucket    string
	Prefix    string
	Endpoint  string // host[:port]; empty: AWS S3 of Region
	Secure    bool   // https to Endpoint
	Region    string
	AccessKey string // with SecretKey; both empty: the AWS environment chain
	SecretKey string
}

// ParseS3URL reads s3://bucket/prefix?endpoint=http://host:port&region=r.
// Credentials never come from the URL (it is logged and shown); the caller
// fills them from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
func ParseS3URL(raw string) (S3Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return S3Config{}, fmt.Errorf("want s3://bucket/prefix?endpoint=…&region=…: %v", err)
	}
	if u.Scheme != "s3" {
		return S3Config{}, fmt.Errorf("want an s3:// URL such as s3://my-bucket/appruntime?region=us-east-1, got scheme %q", u.Scheme)
	}
	if u.User != nil {
		return S3Config{}, errors.New("credentials do not belong in the URL: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	if u.Host == "" {
		return S3Config{}, errors.New("the URL names no bucket: want s3://bucket/prefix")
	}
	cfg := S3Config{Bucket: u.Host, Region: u.Query().Get("region"), Secure: true}
	if p := strings.Trim(u.Path, "/"); p != "" {
		cfg.Prefix = p + "/"
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	for k := range u.Query() {
		if k != "endpoint" && k != "region" {
			return S3Config{}, fmt.Errorf("unknown query parameter %q (want endpoint, region)", k)
		}
	}
	if ep := u.Query().Get("endpoint"); ep != "" {
		e, err := url.Parse(ep)
		if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || (e.Path != "" && e.Path != "/") {
			return S3Config{}, fmt.Errorf("endpoint: want http(s)://host[:port], got %q", ep)
		}
		cfg.Endpoint, cfg.Secure = e.Host, e.Scheme == "https"
	}
	return cfg, nil
}

// s3CheckBudget bounds the bucket check NewS3 makes at start.
const s3CheckBudget = 10 * time.Second

// NewS3 connects to the bucket and checks, within s3CheckBudget, that it
// exists and that the credentials are accepted, so that a wrong setting
// fails at start rather than on the first upload.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("storage: s3: no bucket given")
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}, &credentials.IAM{},
	})
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, "")
	}
	lookup := minio.BucketLookupAuto
	if cfg.Endpoint != "" {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: cfg.Secure, Region: cfg.Region, BucketLookup: lookup})
	if err != nil {
		return nil, fmt.Errorf("storage: s3: %w", err)
	}
	s := &S3{client: client, bucket: cfg.Bucket, prefix: cfg.Prefix}
	cctx, cancel := context.WithTimeout(ctx, s3CheckBudget)
	defer cancel()
	ok, err := client.BucketExists(cctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("storage: s3: checking bucket %q at %s: %s", cfg.Bucket, endpoint, describeS3(err))
	}
	if !ok {
		return nil, fmt.Errorf("storage: s3: bucket %q does not exist at %s: create it first", cfg.Bucket, endpoint)
	}
	return s, nil
}

// describeS3 turns an S3 error response into words an operator acts on.
func describeS3(err error) string {
	switch minio.ToErrorResponse(err).Code {
	case "InvalidAccessKeyId":
		return "the access key is not known to the server (check AWS_ACCESS_KEY_ID)"
	case "SignatureDoesNotMatch":
		return "the secret key does not match the access key (check AWS_SECRET_ACCESS_KEY)"
	case "AccessDenied":
		return "access denied: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and that they may use this bucket"
	}
	return err.Error()
}

func (s *S3) object(key string) (string, error) {
	if key == "" || len(key) > MaxKeyBytes {
		return "", fmt.Errorf("storage: s3: bad key length %d", len(key))
	}
	return s.prefix + key, nil
}

// Put implements Store.
func (s *S3) Put(ctx context.Context, key, contentType string, data []byte) error {
	name, err := s.object(key)
	if err != nil {
		return err
	}
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	_, err = s.client.PutObject(ctx, s.bucket, name, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: contentType})
	if err != nil {
		return fmt.Errorf("storage: s3: put %s: %s", key, describeS3(err))
	}
	return nil
}

// Get implements Store.
func (s *S3) Get(ctx context.Context, key string) ([]byte, error) {
	r, err := s.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("storage: s3: get %s: %s", key, describeS3(err))
	}
	return data, nil
}

// Open implements Store: one streaming GET.
func (s *S3) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	return s.OpenRange(ctx, key, 0, -1)
}

// OpenRange streams the bytes of key from offset off, length n (n < 0: to
// the end) with one ranged GET, or returns an apperr not_found error.
func (s *S3) OpenRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	name, err := s.object(key)
	if err != nil {
		return nil, err
	}
	opts := minio.GetObjectOptions{}
	switch {
	case n == 0:
		return io.NopCloser(bytes.NewReader(nil)), nil
	case n > 0:
		err = opts.SetRange(off, off+n-1)
	case off > 0:
		err = opts.SetRange(off, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: s3: range: %w", err)
	}
	obj, err := s.client.GetObject(ctx, s.bucket, name, opts)
	if err != nil {
		return nil, fmt.Errorf("storage: s3: get %s: %s", key, describeS3(err))
	}
	// GetObject is lazy: Stat makes the request, so a missing key or a
	// refused credential shows here rather than at the first Read.
	if _, err := obj.Stat(); err != nil {
		_ = obj.Close()
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil, apperr.NotFoundf("blob %s not found", key)
		}
		return nil, fmt.Errorf("storage: s3: get %s: %s", key, describeS3(err))
	}
	return obj, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	name, err := s.object(key)
	if err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, name, minio.RemoveObjectOptions{}); err != nil &&
		minio.ToErrorResponse(err).Code != "NoSuchKey" {
		return fmt.Errorf("storage: s3: delete %s: %s", key, describeS3(err))
	}
	return nil
}

// PresignGet returns a URL that reads key directly from the bucket for
// expiry, signed with the store's credentials. params are the response
// overrides S3 applies to that GET (response-content-type,
// response-content-disposition, response-cache-control); nil for none.
func (s *S3) PresignGet(ctx context.Context, key string, expiry time.Duration, params url.Values) (*url.URL, error) {
	name, err := s.object(key)
	if err != nil {
		return nil, err
	}
	u, err := s.client.PresignedGetObject(ctx, s.bucket, name, expiry, params)
	if err != nil {
		return nil, fmt.Errorf("storage: s3: presign %s: %w", key, err)
	}
	return u, nil
}

// PresignExisting is PresignGet for a key the bucket holds: a key it does
// not hold is an apperr not_found error (one HEAD request), so a caller can
// serve the bytes itself instead of redirecting to a 404.
func (s *S3) PresignExisting(ctx context.Context, key string, expiry time.Duration, params url.Values) (*url.URL, error) {
	name, err := s.object(key)
	if err != nil {
		return nil, err
	}
	if _, err := s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{}); err != nil {
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil, apperr.NotFoundf("blob %s not found", key)
		}
		return nil, fmt.Errorf("storage: s3: stat %s: %s", key, describeS3(err))
	}
	return s.PresignGet(ctx, key, expiry, params)
}
