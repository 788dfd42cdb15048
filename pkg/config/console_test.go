package config

import (
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/transport"
)

// TestConsoleIsTheOperators: the console shows true outcomes, so off loopback, and
// wherever operators are named, a start is refused without TLS, the curator's client
// CA and the operators' identities; on loopback it may serve plain HTTP.
func TestConsoleIsTheOperators(t *testing.T) {
	tlsFiles := transport.ServerSecurity{CertFile: "server.pem", KeyFile: "server-key.pem", ClientCAFile: "ca.pem"}
	for _, tc := range []struct {
		name      string
		listen    string
		security  transport.ServerSecurity
		operators []string
		want      string // the setting refused; "" for a start
	}{
		{"off", "", transport.ServerSecurity{}, nil, ""},
		{"loopback, plain HTTP", "127.0.0.1:0", transport.ServerSecurity{}, nil, ""},
		{"localhost, plain HTTP", "localhost:8443", transport.ServerSecurity{}, nil, ""},
		{"off loopback, plain HTTP", "0.0.0.0:8443", transport.ServerSecurity{}, nil, "console-listen"},
		{"off loopback, no operators", "0.0.0.0:8443", tlsFiles, nil, "console-listen"},
		{"off loopback, operators without a client CA", "0.0.0.0:8443", transport.ServerSecurity{CertFile: "server.pem", KeyFile: "server-key.pem", TokensFile: "tokens"},
			[]string{"officer"}, "console-listen"},
		{"off loopback, operators and TLS", "0.0.0.0:8443", tlsFiles, []string{"officer"}, ""},
		{"loopback, operators without TLS", "127.0.0.1:0", transport.ServerSecurity{}, []string{"officer"}, "console-listen"},
		{"operators without a console", "", tlsFiles, []string{"officer"}, "console-operators"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Listen: "127.0.0.1:0", DataPath: "d.csv", Data: dataset.Options{Target: "y"}, StateDir: t.TempDir(),
				Budget: ledger.Cost{Epsilon: 1, Delta: 1e-5}, DatasetID: "small", ConsoleListen: tc.listen, ConsoleOperators: tc.operators}
			cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.ClientCAFile, cfg.TokensFile = tc.security.CertFile, tc.security.KeyFile, tc.security.ClientCAFile, tc.security.TokensFile
			_, _, err := cfg.Resolve()
			var fe *FieldError
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Resolve: %v, want a start", err)
			case tc.want != "" && (!errors.As(err, &fe) || fe.Field != tc.want):
				t.Fatalf("Resolve: %v, want a refusal of --%s", err, tc.want)
			}
		})
	}
}

// TestConsoleOperatorsFlag: --console-operators takes a comma-separated list of
// identities and refuses one that is not an identity.
func TestConsoleOperatorsFlag(t *testing.T) {
	cfg := NewConfig()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg.Bind().Register(fs)
	if err := fs.Parse([]string{"--console-operators", "officer, dpo-2"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.ConsoleOperators, "|"); got != "officer|dpo-2" {
		t.Errorf("--console-operators \"officer, dpo-2\" = %q, want officer|dpo-2", got)
	}
	if err := fs.Set("console-operators", "officer,_curator"); err == nil {
		t.Errorf("--console-operators with a reserved identity: accepted, %v", cfg.ConsoleOperators)
	}
}
