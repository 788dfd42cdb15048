package console

import (
	"context"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/devca"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/transport"
)

// fixture is a curator over a small data set (target y = row mod 5, Laplace answers at
// ε 1 on [0, 5]) whose ledger has the limits recorded, the curator's own charge and
// two identities' answers.
type fixture struct {
	cfg Config
	ds  *dataset.Dataset
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("a,b,y\n")
	for i := range 20 {
		fmt.Fprintf(&b, "%d,%d,%d\n", i, (i*7)%11, i%5)
	}
	path := filepath.Join(dir, "d.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.LoadCSV(path, dataset.Options{Target: "y"})
	if err != nil {
		t.Fatal(err)
	}
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 3, Delta: 1e-5},
		Patient: ledger.PatientLimits{Dataset: ledger.Cost{Epsilon: 20, Delta: 1e-5}}}
	led, err := ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	ctx := context.Background()
	if _, err := led.RecordLimits(ctx, "small", false); err != nil {
		t.Fatal(err)
	}
	if _, err := led.Charge(ctx, ledger.Charge{Account: ledger.Account{Dataset: "small", Identity: curator.CuratorIdentity}, Key: "scaling", Kind: ledger.KindScalingEstimate,
		Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.25}}); err != nil {
		t.Fatal(err)
	}
	cur, err := curator.New(curator.Config{Dataset: ds, DatasetID: "small", Ledger: led, StateDir: dir,
		Output: curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 1, Lower: 0, Upper: 5}})
	if err != nil {
		t.Fatal(err)
	}
	for id, rows := range map[string][]int{"vendor-a": {3, 4, 9}, "vendor-b": {12}} {
		if _, _, err := cur.Query(ctx, id, rows); err != nil {
			t.Fatal(err)
		}
	}
	return fixture{cfg: Config{Dataset: "small", Ledger: led, Limits: limits, Outcomes: ds.Y}, ds: ds}
}

// fakeJobs lists each identity's jobs.
type fakeJobs map[string][]jobs.Job

func (f fakeJobs) List(_ context.Context, identity string) ([]jobs.Job, error) {
	return f[identity], nil
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestPage: the page states each identity, the whole-patient totals against the cap,
// each relation's spent and left as a charge finds them, the limits, the releases,
// the chart, and each identity's true outcomes and ranks; it runs no script.
func TestPage(t *testing.T) {
	f := newFixture(t)
	f.cfg.Jobs = fakeJobs{"vendor-b": {{ID: "job-7", Identity: "vendor-b", State: jobs.Failed, Error: "interrupted"}}}
	srv := httptest.NewServer(Handler(f.cfg))
	defer srv.Close()
	code, page := get(t, srv.Client(), srv.URL+"/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d:\n%s", code, page)
	}
	rep, err := f.cfg.Ledger.Report(context.Background(), "small", f.cfg.Limits)
	if err != nil {
		t.Fatal(err)
	}
	total := rep.Patient.Dataset.Total.Cost().Epsilon // 2.25: each identity's answers (ε 1) and the estimate (0.25)
	for _, want := range []string{
		"<td>vendor-a</td>", "<td>vendor-b</td>", "_curator (the curator&#39;s own records",
		fmt.Sprintf(`<td>dataset (all identities and the curator&#39;s own estimates)</td><td class="num">%s</td>`, fig(total)),
		"<td>ε 20, δ 1e-05</td>", // the whole-patient cap of the dataset
		// record: vendor-a spent 1; left is the dataset's 3 − 2.25 = 0.75, not its own 9.
		`<td>vendor-a</td><td class="num">4</td><td class="num">1</td><td class="num">0</td><td class="num">0</td><td class="num">0.75</td>`,
		"<td>ε 10, δ 1e-05</td><td>ε 3, δ 1e-05</td><td>no cap</td><td>ε 20, δ 1e-05</td>", // the limits history
		"The latest 3 of 3 charged releases", "<td>scaling-estimate</td>", "<td>query-answers</td>", "<svg", "cap ε 20",
		"rank 1 is the highest of 20 rows",
		// vendor-a's rows 3, 4, 9 have outcomes 3, 4, 4: row 4 is its best, tied at rank 1 with 3 others.
		"best true outcome: row 4 = 4, rank 1",
		"<td>job-7</td><td>vendor-b</td><td></td><td>failed</td>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if total != 2.25 {
		t.Errorf("the dataset's whole-patient ε = %g, want 2.25", total)
	}
	if strings.Contains(strings.ToLower(page), "<script") {
		t.Error("the page has a script")
	}
	if t.Failed() {
		t.Logf("page:\n%s", page)
	}
}

// TestReadOnly: only GET / is served.
func TestReadOnly(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(Handler(f.cfg))
	defer srv.Close()
	if code, _ := get(t, srv.Client(), srv.URL+"/metrics"); code != http.StatusNotFound {
		t.Errorf("GET /metrics = %d, want 404", code)
	}
	resp, err := srv.Client().Post(srv.URL+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST / = %d, want 405", resp.StatusCode)
	}
}

// TestOperatorsOnly: with operators named, the page is served over mutual TLS to an
// operator's client certificate only: a modeler's certificate from the same CA is
// forbidden, and a caller without one cannot connect.
func TestOperatorsOnly(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	if err := devca.Create(dir, []string{"127.0.0.1"}, []string{"officer", "vendor-a"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	tc, err := transport.ServerTLS(filepath.Join(dir, devca.ServerFile), filepath.Join(dir, devca.ServerKeyFile), filepath.Join(dir, devca.CAFile), false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.cfg
	cfg.Operators = []string{"officer"}
	srv := httptest.NewUnstartedServer(Handler(cfg))
	srv.TLS = tc
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.StartTLS()
	defer srv.Close()
	client := func(identity string) *http.Client {
		cert, key := "", ""
		if identity != "" {
			cert, key = devca.ClientFiles(identity)
			cert, key = filepath.Join(dir, cert), filepath.Join(dir, key)
		}
		cc, err := transport.ClientTLS(filepath.Join(dir, devca.CAFile), cert, key, "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cc}}
	}
	if code, page := get(t, client("officer"), srv.URL+"/"); code != http.StatusOK || !strings.Contains(page, "vendor-a") {
		t.Errorf("the officer's GET / = %d, want 200 and the page", code)
	}
	if code, _ := get(t, client("vendor-a"), srv.URL+"/"); code != http.StatusForbidden {
		t.Errorf("a modeler's GET / = %d, want 403", code)
	}
	if resp, err := client("").Get(srv.URL + "/"); err == nil {
		resp.Body.Close()
		t.Errorf("GET / without a client certificate = %d, want no connection", resp.StatusCode)
	}
	// Without TLS, a console that names operators serves no one.
	plain := httptest.NewServer(Handler(cfg))
	defer plain.Close()
	if code, _ := get(t, plain.Client(), plain.URL+"/"); code != http.StatusForbidden {
		t.Errorf("GET / over plain HTTP with operators named = %d, want 403", code)
	}
}

// TestLeftRoundsDown: a remainder shows at most 4 significant digits and never more
// than is left.
func TestLeftRoundsDown(t *testing.T) {
	for _, tc := range []struct {
		r    *big.Rat
		want string
	}{
		{big.NewRat(3, 4), "0.75"},
		{big.NewRat(99996, 100), "999.9"}, // not 1000
		{big.NewRat(2, 3), "0.6666"},      // not 0.6667
		{big.NewRat(1, 3_000_000), "3.333e-07"},
		{big.NewRat(0, 1), "0"},
		{big.NewRat(12345678, 1000), "12340"}, // figure.Text's form, not 1.234e+04
	} {
		if got := left(tc.r); got != tc.want {
			t.Errorf("left(%s) = %s, want %s", tc.r.RatString(), got, tc.want)
		}
	}
}
