package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/internal/apiclient"
	"github.com/recallhq/recall/store"
)

// UsersMethod says how the users scenario serves the export and deletion
// and measures the export's memory.
const UsersMethod = "child process `recall api`; RSS growth is the peak RSS while streaming (VmHWM, reset through /proc/PID/clear_refs, " +
	"and VmRSS sampled every 5 ms) less VmRSS before the request"

// usersScenario is the users scenario: one user with many conversations
// and a large archive in all, written through the store as the search
// scenario writes its conversation; GET …/evidence of them from loopback
// clients with RS256 tokens verified through a JWKS, beside the same with
// HS256 tokens, alternating rounds (through the API in process); then GET
// /v1/users/{user_id}/export streamed from a child `recall api`, its rate
// and the child's RSS growth; then DELETE /v1/users/{user_id} on it.
func (e *env) usersScenario(ctx context.Context, res *Result) error {
	// Nothing else runs while it is measured.
	if err := e.stopPipeline(); err != nil {
		return err
	}
	st, err := store.New(e.pool, &store.Config{Logger: e.logger, Jobs: discardJobs{}})
	if err != nil {
		return err
	}
	const userID = "users-big"
	start := time.Now()
	convs, err := e.buildUser(ctx, st, userID)
	if err != nil {
		return err
	}
	var entries int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM recall_archive WHERE user_id = $1`, userID).Scan(&entries); err != nil {
		return fmt.Errorf("count the user's archive: %w", err)
	}
	if entries < e.sz.usersEntries {
		return fmt.Errorf("the user's archive holds %d entries, want at least %d", entries, e.sz.usersEntries)
	}
	e.progress("users: %d conversations with %d archive entries in all built in %.1fs", len(convs), entries, time.Since(start).Seconds())
	if _, err := e.pool.Exec(ctx, `ANALYZE recall_archive, recall_conversation`); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	res.UsersConversations, res.UsersArchiveEntries = len(convs), entries

	// Before the deletion, which removes what it reads.
	if err := e.jwksLoad(ctx, st, userID, convs, res); err != nil {
		return fmt.Errorf("jwks: %w", err)
	}
	return e.exportAndDelete(ctx, userID, res)
}

// buildUser writes e.sz.usersConvs conversations of userID, together
// holding at least e.sz.usersEntries archive entries, Concurrency at a
// time, and returns their ids.
func (e *env) buildUser(ctx context.Context, st *store.Store, userID string) ([]string, error) {
	n := e.sz.usersConvs
	per := (e.sz.usersEntries + n - 1) / n
	convs := make([]string, n)
	for i := range convs {
		convs[i] = fmt.Sprintf("c%03d", i)
	}
	var (
		next     atomic.Int64
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	for range min(e.cfg.Concurrency, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				c := &directConv{e: e, st: st, userID: userID, conversationID: convs[i], gen: newChatter(uint64(i + 1))}
				if err := c.build(ctx, per); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return convs, ctx.Err()
}

// jwksLoad measures GET …/evidence of the user's conversations with an
// RS256 token verified with the key of a JWKS served in process, beside
// the same with an HS256 token, through the API in process.
func (e *env) jwksLoad(ctx context.Context, st *store.Store, userID string, convs []string, res *Result) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	const kid = "recall-bench-rsa"
	b64 := base64.RawURLEncoding
	set, err := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
		"n": b64.EncodeToString(key.N.Bytes()), "e": b64.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
	}}})
	if err != nil {
		return err
	}
	idpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(set)
	}))
	defer idpSrv.Close()
	idp, err := api.NewIdentityProvider(ctx, &api.IdentityProviderConfig{
		JWKSURL: idpSrv.URL + "/.well-known/jwks.json", Client: idpSrv.Client(), Logger: e.logger,
	})
	if err != nil {
		return err
	}
	srv, err := e.startAPIWithIdP(ctx, st, idp)
	if err != nil {
		return err
	}
	defer srv.close()

	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"sub": userID, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	})
	tok.Header["kid"] = kid
	rsToken, err := tok.SignedString(key)
	if err != nil {
		return err
	}
	hsTokens, rsTokens := map[string]string{userID: srv.token(userID)}, map[string]string{userID: rsToken}
	keys := make([][2]string, len(convs))
	for i, c := range convs {
		keys[i] = [2]string{userID, c}
	}
	clients := e.sz.usersClients
	hc := newHTTPClient(2 * clients)
	defer hc.CloseIdleConnections()
	warm := min(e.sz.readDuration, 500*time.Millisecond)
	if _, err := readLoad(ctx, hc, srv.url, keys, hsTokens, clients, warm); err != nil {
		return fmt.Errorf("HS256: %w", err)
	}
	if _, err := readLoad(ctx, hc, srv.url, keys, rsTokens, clients, warm); err != nil {
		return fmt.Errorf("RS256: %w", err)
	}
	pr, err := e.pairedRounds("jwks (api: RS256 through the JWKS; baseline: HS256)", e.sz.readRounds,
		func() (readResult, error) {
			return readLoad(ctx, hc, srv.url, keys, hsTokens, clients, e.sz.readDuration)
		},
		func() (readResult, error) {
			return readLoad(ctx, hc, srv.url, keys, rsTokens, clients, e.sz.readDuration)
		})
	if err != nil {
		return err
	}
	res.JWKSClients = clients
	res.JWKSRequestsPerS, res.JWKSHS256RequestsPerS = pr.rps, pr.baseRPS
	res.JWKSReadRatio = pr.ratio
	return nil
}

// exportAndDelete serves the API from a child `recall api`, streams the
// user's export from it, measuring its rate and the child's RSS growth,
// and then deletes the user through it.
func (e *env) exportAndDelete(ctx context.Context, userID string, res *Result) error {
	// The child needs connections of its own.
	e.pool.Reset()
	child, base, secret, err := e.spawnAPI("")
	if err != nil {
		return err
	}
	defer child.stop()
	client := newHTTPClient(2)
	defer client.CloseIdleConnections()
	if err := child.waitHealthy(ctx, client, base); err != nil {
		return err
	}
	token, err := apiclient.Sign([]byte(secret), userID, time.Hour, nil)
	if err != nil {
		return err
	}
	userURL := base + "/v1/users/" + url.PathEscape(userID)

	res.ExportMemoryMethod = UsersMethod
	var rates []float64
	for round := range e.sz.exportRounds {
		x, err := exportOnce(ctx, client, child.cmd.Process.Pid, userURL+"/export", token)
		if err != nil {
			return fmt.Errorf("export: %w\n%s", err, child.logs())
		}
		if x.end.Conversations != res.UsersConversations || x.end.Entries != res.UsersArchiveEntries {
			return fmt.Errorf("export: the end line counts %d conversations and %d entries, want %d and %d",
				x.end.Conversations, x.end.Entries, res.UsersConversations, res.UsersArchiveEntries)
		}
		rate := float64(x.bytes) / 1e6 / x.elapsed.Seconds()
		rates = append(rates, rate)
		res.ExportBytes = x.bytes
		res.ExportRSSGrowthMiB = max(res.ExportRSSGrowthMiB, mib(x.growth))
		e.progress("users: export round %d/%d: %.1f MB in %.2fs, %.1f MB/s; child RSS %.1f MiB before, +%.1f MiB at peak",
			round+1, e.sz.exportRounds, float64(x.bytes)/1e6, x.elapsed.Seconds(), rate, mib(x.before), mib(x.growth))
	}
	res.ExportMBPerS = median(rates)

	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, userURL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	res.DeleteUserSeconds = time.Since(t0).Seconds()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("delete: status %d: %s", resp.StatusCode, body)
	}
	var left int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM recall_archive WHERE user_id = $1`, userID).Scan(&left); err != nil {
		return fmt.Errorf("count the archive left: %w", err)
	}
	if left != 0 {
		return fmt.Errorf("delete: %d archive entries of the user are left", left)
	}
	e.progress("users: DELETE of %d conversations and %d entries in %.2fs", res.UsersConversations, res.UsersArchiveEntries, res.DeleteUserSeconds)
	return child.stop()
}

// spawnAPI starts a child `recall api` on a free loopback port with a JWT
// secret of its own, and returns it with its base URL and the secret. With
// stream, the API hears the wake-ups of that stream's workers (its
// RECALL_STREAM); without, the default stream's.
func (e *env) spawnAPI(stream string) (c *child, apiURL, secret string, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", "", err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	var raw [32]byte
	_, _ = rand.Read(raw[:])
	secret = hex.EncodeToString(raw[:])
	env := []string{"NATS_URL=" + e.cfg.NATSURL, "RECALL_HTTP_ADDR=" + addr, "RECALL_JWT_SECRET=" + secret}
	if stream != "" {
		env = append(env, "RECALL_STREAM="+stream)
	}
	c, err = e.spawn("api", env...)
	if err != nil {
		return nil, "", "", err
	}
	return c, "http://" + addr, secret, nil
}

// waitHealthy waits until the child answers GET /healthz.
func (c *child) waitHealthy(ctx context.Context, client *http.Client, base string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.done:
			return fmt.Errorf("the child api exited: %v\n%s", c.err, c.logs())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the child api did not answer /healthz within 30s\n%s", c.logs())
		}
	}
}

// exportResult is one export streamed.
type exportResult struct {
	bytes   int
	elapsed time.Duration
	before  int // the server's VmRSS before the request
	growth  int // its peak RSS while streaming, less before
	end     struct {
		Type          string `json:"type"`
		Conversations int    `json:"conversations"`
		Entries       int    `json:"entries"`
	}
}

// exportOnce streams one export from the server of process pid, reading
// its body as fast as it comes, and returns its size and duration, the
// process's RSS growth meanwhile and the export's end line.
func exportOnce(ctx context.Context, client *http.Client, pid int, exportURL, token string) (*exportResult, error) {
	var x exportResult
	// Reset the peak RSS to the current RSS; without it (another kernel,
	// no permission) the samples stand alone.
	hwmReset := os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0) == nil
	rss, _, err := procMemory(pid)
	if err != nil {
		return nil, err
	}
	x.before = rss
	peak := rss
	stop, sampled := make(chan struct{}), make(chan int, 1)
	go func() {
		high := 0
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if r, _, err := procMemory(pid); err == nil {
				high = max(high, r)
			}
			select {
			case <-stop:
				sampled <- high
				return
			case <-t.C:
			}
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, exportURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		close(stop)
		return nil, err
	}
	tail := &tailBuffer{max: 4 << 10}
	n, err := io.Copy(tail, resp.Body)
	resp.Body.Close()
	x.elapsed = time.Since(t0)
	close(stop)
	peak = max(peak, <-sampled)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, tail.String())
	}
	if _, hwm, err := procMemory(pid); err == nil && hwmReset {
		peak = max(peak, hwm)
	}
	x.bytes, x.growth = int(n), max(0, peak-x.before)
	lines := bytes.Split(bytes.TrimRight([]byte(tail.String()), "\n"), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], &x.end); err != nil || x.end.Type != "end" {
		return nil, errors.New("the export does not end with its end line")
	}
	return &x, nil
}
