package hubtest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ResultPage is a ~100 KB tools/call result as a GitHub or tracker server
// answers one: a text block holding a JSON list of issues with comments
// (prose with a few words such as "token" and "key"), CI log lines and
// commit hashes, with an e-mail address and an AWS key in it when findings
// is true. The content filters' benchmarks (internal/guardrails and
// make bench) filter it.
func ResultPage(findings bool) json.RawMessage {
	prose := []string{
		"The sync job fails after the upgrade to v2.3.1; the worker restarts every few minutes.",
		"I can reproduce it on main with the default configuration and an empty cache directory.",
		"Looks like the retry budget is exhausted before the upstream answers, see the log below.",
		"We should rotate the deploy token after this, and move the signing key to the vault.",
		"Closing as a duplicate of the pagination bug; the fix lands in the next release.",
		"Thanks for the detailed report, this helps a lot. Could you attach the full trace?",
	}
	var sb strings.Builder
	sb.WriteString("[")
	for i := 0; sb.Len() < 100_000; i++ {
		if i > 0 {
			sb.WriteString(",")
		}
		var log strings.Builder
		for j := range 6 {
			fmt.Fprintf(&log, "2026-12-02T15:%02d:%02d.%03dZ INFO worker=%d GET /api/v1/items?page=%d status=200 dur=%dms\\n", j, i%60, i*7%1000, i%8, j, 10+j)
		}
		body := prose[i%len(prose)] + " " + prose[(i+1)%len(prose)]
		if findings && i == 3 {
			body += " Customer olga.kowalska@fabrikam.de asked about it; the log had AWS_ACCESS_KEY_ID=AKIAZ3MSJV5WKQ7TYRXB in it."
		}
		fmt.Fprintf(&sb, `{"number":%d,"title":"Sync fails after upgrade (%d)","state":"open","labels":["bug","area/sync"],"user":{"login":"dev%d"},`+
			`"body":%q,"comments":[{"user":"dev%d","body":%q,"created_at":"2026-12-02T10:00:00Z"}],"log":"%s","head":"%040x"}`,
			4000+i, i, i%7, body, i%5, prose[(i+2)%len(prose)], log.String(), i*7919)
	}
	sb.WriteString("]")
	res, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": sb.String()}}})
	return res
}
