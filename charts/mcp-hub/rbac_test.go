package chart_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeRBACTables reads the tables of the chart README's section "What
// the hub may do in the cluster", in order, as grants in ruleGrants' form
// ("group/resource verb [name]"). A row says its API groups ("core" is
// the core group), its resources in backticks with "resourceNames `x`" for
// named objects (words in parentheses are commentary), and its verbs.
func readmeRBACTables(t *testing.T) [][]string {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## What the hub may do in the cluster\n")
	if !ok {
		t.Fatal(`README.md has no section "What the hub may do in the cluster"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	paren := regexp.MustCompile(`\([^)]*\)`)
	ticked := regexp.MustCompile("`([^`]+)`")
	var tables [][]string
	var cur []string
	inTable := false
	for line := range strings.Lines(section) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if inTable {
				tables = append(tables, cur)
				cur, inTable = nil, false
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 {
			t.Fatalf("README RBAC row %q: want 3 cells", line)
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if cells[0] == "API group" || strings.HasPrefix(cells[0], "---") {
			inTable = true
			continue
		}
		var groups []string
		for _, g := range strings.Split(cells[0], ",") {
			g = strings.Trim(strings.TrimSpace(g), "`")
			if g == "core" {
				g = ""
			}
			groups = append(groups, g)
		}
		resCell, namesCell, _ := strings.Cut(paren.ReplaceAllString(cells[1], ""), "resourceNames")
		var resources, names []string
		for _, m := range ticked.FindAllStringSubmatch(resCell, -1) {
			resources = append(resources, m[1])
		}
		for _, m := range ticked.FindAllStringSubmatch(namesCell, -1) {
			names = append(names, m[1])
		}
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range groups {
			for _, r := range resources {
				for _, v := range strings.Split(cells[2], ",") {
					for _, n := range names {
						cur = append(cur, strings.TrimSpace(g+"/"+r+" "+strings.TrimSpace(v)+" "+n))
					}
				}
			}
		}
	}
	if inTable {
		tables = append(tables, cur)
	}
	return tables
}

// roleGrants renders the chart with values and returns the grants of the
// Role named name in namespace.
func roleGrants(t *testing.T, values, kind, ns, name string) []string {
	t.Helper()
	objs, err := render(t, values)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.Kind == kind && o.Metadata.Namespace == ns && o.Metadata.Name == name {
			var r role
			o.decode(t, &r)
			return ruleGrants(t, o.key(), r.Rules)
		}
	}
	t.Fatalf("no %s %s/%s rendered", kind, ns, name)
	return nil
}

// TestReadmeRBACTables: the chart README's RBAC tables say exactly what the
// rendered Roles grant: the watched namespace's Role, the pins Role, and
// what auth.serviceAccounts.enabled adds to the first. A grant added to
// the chart without its row (or a row left after its grant went) fails.
func TestReadmeRBACTables(t *testing.T) {
	tables := readmeRBACTables(t)
	if len(tables) != 5 {
		t.Fatalf("README RBAC section has %d tables, want 5 (watched namespaces, pins, service-account callers, leader election, user grants)", len(tables))
	}
	watched, pins, saAuth, leader, grants := tables[0], tables[1], tables[2], tables[3], tables[4]
	// The README names the grants Secret <userGrants.secret>.
	for i, g := range grants {
		grants[i] = strings.Replace(g, "<userGrants.secret>", "mcp-hub-grants", 1)
	}
	checkGrants(t, "README table of the user grants Role vs the rendered Role",
		roleGrants(t, "userGrants: {enabled: true, keySecret: {name: grants-key}}\n", "Role", namespace, fullname+"-grants"), grants)
	// The README names the Lease <fullname>.
	for i, g := range leader {
		leader[i] = strings.Replace(g, "<fullname>", fullname, 1)
	}
	checkGrants(t, "README table of the leader election Role vs the rendered Role",
		roleGrants(t, "", "Role", namespace, leaderRoleName), leader)
	checkGrants(t, "README table of the leader election Role vs leaderGrants", leader, leaderGrants(fullname))
	checkGrants(t, "README table of the watched namespaces' Role vs the rendered Role",
		roleGrants(t, "", "Role", namespace, fullname), watched)
	checkGrants(t, "README table of the pins Role vs the rendered Role",
		roleGrants(t, "", "Role", namespace, pinsRoleName), pins)
	checkGrants(t, "README tables with auth.serviceAccounts.enabled vs the rendered Role",
		roleGrants(t, "auth: {serviceAccounts: {enabled: true}}\n", "Role", namespace, fullname), append(slices.Clone(watched), saAuth...))
	// The tables and the test's own list of least privilege agree too.
	checkGrants(t, "README table vs leastPrivilege", watched, leastPrivilege)
}

// TestSecretNames: with rbac.secretNames the hub's Roles grant get, list
// and watch on exactly those Secrets (and on no other Secret), and the hub
// is told to read only them, so its watches (one per name, selecting
// metadata.name) are what RBAC allows; without it, neither.
func TestSecretNames(t *testing.T) {
	values := "watch: {namespaces: [team-a, team-b]}\nrbac: {secretNames: [github-token, jira-token]}\n"
	want := []string{}
	for _, g := range leastPrivilege {
		if !strings.HasPrefix(g, "/secrets ") {
			want = append(want, g)
		}
	}
	for _, v := range []string{"get", "list", "watch"} {
		want = append(want, "/secrets "+v+" github-token", "/secrets "+v+" jira-token")
	}
	for _, ns := range []string{"team-a", "team-b"} {
		checkGrants(t, "Role in "+ns, roleGrants(t, values, "Role", ns, fullname), want)
	}
	for _, tc := range []struct{ values, want string }{
		{values, "github-token,jira-token"},
		{"", ""},
	} {
		objs, err := render(t, tc.values)
		if err != nil {
			t.Fatal(err)
		}
		var d deployment
		index(objs).one(t, "Deployment").decode(t, &d)
		args := d.Spec.Template.Spec.Containers[0].Args
		if got := flagValue(args, "--secret-names"); got != tc.want || (tc.want == "") == slices.Contains(args, "--secret-names") {
			t.Errorf("values %q: --secret-names %q, want %q (args %q)", tc.values, got, tc.want, args)
		}
	}
	if _, err := render(t, "rbac: {secretNames: [Not_A_Name]}\n"); err == nil || !strings.Contains(err.Error(), "/rbac/secretNames/0") {
		t.Errorf("a bad Secret name: %v, want an error naming rbac.secretNames[0]", err)
	}
}

// leaderRoleName names the Role (and binding) of the leader election in
// the release namespace; leaderGrants(lease) is all it grants: the Lease
// by name, and create (which cannot be limited by name).
const leaderRoleName = fullname + "-leader"

func leaderGrants(lease string) []string {
	return []string{"coordination.k8s.io/leases get " + lease, "coordination.k8s.io/leases update " + lease, "coordination.k8s.io/leases create"}
}

// checkLeaderRBAC checks the Role and RoleBinding of the leader election
// and returns m without them.
func checkLeaderRBAC(t *testing.T, m manifests) manifests {
	t.Helper()
	return checkNamedRBAC(t, m, "Role", leaderRoleName, leaderGrants(fullname))
}

// TestLeaderElectionLease: the Lease the Role grants is the one the hub is
// told to stand for, per release by default or as configured; with the
// election off there is neither the Role nor the setting.
func TestLeaderElectionLease(t *testing.T) {
	for _, tc := range []struct {
		name, values, lease string
	}{
		{"default: the release's full name", "", fullname},
		{"configured", "config: {kubernetes: {leaderElection: {leaseName: hubs}}}\n", "hubs"},
		{"off", "config: {kubernetes: {leaderElection: {enabled: false}}}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := render(t, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			m := index(objs)
			cfg := checkConfig(t, m, 0)
			if got := cfg.Kubernetes.LeaderElection; got.On() != (tc.lease != "") || (tc.lease != "" && got.LeaseName != tc.lease) {
				t.Errorf("config leaderElection %+v, want lease %q", got, tc.lease)
			}
			if tc.lease == "" {
				for _, o := range objs {
					if o.Metadata.Name == leaderRoleName {
						t.Errorf("%s rendered with the election off", o.key())
					}
				}
				return
			}
			checkNamedRBAC(t, m, "Role", leaderRoleName, leaderGrants(tc.lease))
		})
	}
}
