package childlog

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRedactSecrets(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"Enrollment URI: otpauth://totp/ZeroClaw:zeroclaw?secret=JBSWY3DPEHPK3PXP&issuer=ZeroClaw&period=30",
			"Enrollment URI: otpauth://[redacted]"},
		{"登録URI: otpauth://totp/ZeroClaw:zeroclaw?secret=JBSWY3DPEHPK3PXP&issuer=ZeroClaw&period=30 ",
			"登録URI: otpauth://[redacted] "},
		{"Initialized OTP secret for ZeroClaw.", "Initialized OTP secret for ZeroClaw."},
		{"request failed: Authorization: Bearer eyJhbGciOi.eyJzdWIiOiIx.c2lnbmF0dXJl",
			"request failed: Authorization: [redacted]"},
		{"header bearer abcdefgh12345678", "header bearer [redacted]"},
		{`config: api_key = "sk-ant-api03-abcdefghijklmnop" model="x"`, `config: api_key = "[redacted]" model="x"`},
		{`{"apiKey":"AIzaSyA1234567890abcdefghijklmnopqrstuv","n":1}`, `{"apiKey":"[redacted]","n":1}`},
		{"OPENROUTER_API_KEY=sk-or-v1-0123456789abcdef0123", "OPENROUTER_API_KEY=[redacted]"},
		{"bot_token: 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1", "bot_token: [redacted]"},
		{"client_secret=abc123&scope=x", "client_secret=[redacted]&scope=x"},
		{"password: hunter22", "password: [redacted]"},
		{"fetching https://user:s3cret@example.com/path", "fetching https://user:[redacted]@example.com/path"},
		{"key sk-proj-abcdefghijklmnopqrstuvwx leaked", "key [redacted] leaked"},
		{"ghp_abcdefghijklmnopqrstuvwxyz0123456789 in use", "[redacted] in use"},
		{"AKIAIOSFODNN7EXAMPLE", "[redacted]"},
		{"telegram 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1 ok", "telegram [redacted] ok"},
		{"Authorization: Token 9f8e7d6c5b4a39281706", "Authorization: [redacted]"},
		{"authorization: Bot MTIzNDU2Nzg5MDEy.abcdef", "authorization: [redacted]"},
		{"SECRET_KEY=django-insecure-abc123 DEBUG=1", "SECRET_KEY=[redacted] DEBUG=1"},
		{`{"client_key": "ck-123456", "signing_key":'sig 99'}`, `{"client_key": "[redacted]", "signing_key":'[redacted]'}`},
		{`{"password":"two words here","user":"ada"}`, `{"password":"[redacted]","user":"ada"}`},
		{"master-key: mk_0123456789", "master-key: [redacted]"},
		// Not secrets: left alone.
		{"primary_key=id sort_key: name cache_key=abc", "primary_key=id sort_key: name cache_key=abc"},
		{"token_ttl_secs=30 max_tokens: 512 input_tokens=7", "token_ttl_secs=30 max_tokens: 512 input_tokens=7"},
		{"task-assessment risk-management-framework-2026", "task-assessment risk-management-framework-2026"},
		{"2026-05-17T10:00:00Z  INFO zeroclaw::acp: session created", "2026-05-17T10:00:00Z  INFO zeroclaw::acp: session created"},
		{"the token refreshed successfully", "the token refreshed successfully"},
		{"Bearer token missing", "Bearer token missing"},
	} {
		if got := RedactSecrets(tt.in); got != tt.want {
			t.Errorf("RedactSecrets(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// FuzzRedactSecrets plants secrets in arbitrary text: they never survive,
// the text around them does, and redacting twice changes nothing.
func FuzzRedactSecrets(f *testing.F) {
	for _, seed := range [][2]string{
		{"Enrollment URI: ", "JBSWY3DPEHPK3PXP"},
		{"\x1b[31merror\x1b[0m api_key=", "sk-0123456789abcdefghij"},
		{"", "A"},
		{"otpauth://", "otpauth://"},
		{"日本語 ", "秘密"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, prefix, secret string) {
		prefix = CleanLine(prefix)
		secret = strings.Map(func(r rune) rune { // a secret is one token of URL-safe text
			if r > 0x20 && r < 0x7f && !strings.ContainsRune(`"'&,;@/`, r) {
				return r
			}
			return -1
		}, secret)
		if secret == "" {
			secret = "x"
		}
		for _, planted := range []string{
			"otpauth://totp/ZeroClaw:zeroclaw?secret=" + secret + "&issuer=ZeroClaw&period=30",
			"api_key=" + secret,
			`"password": "` + secret + `"`,
			"Authorization: Bearer " + secret + "12345678",
		} {
			line := prefix + " " + planted + " tail"
			got := RedactSecrets(line)
			// The marker itself may begin like a secret ("[").
			if strings.Contains(strings.ReplaceAll(got, Redacted, "\x00"), planted) {
				t.Fatalf("secret survived: %q → %q", line, got)
			}
			if !strings.HasSuffix(got, " tail") || !utf8.ValidString(got) {
				t.Fatalf("text around the secret damaged: %q → %q", line, got)
			}
			if again := RedactSecrets(got); again != got {
				t.Fatalf("not idempotent: %q → %q → %q", line, got, again)
			}
		}
	})
}
