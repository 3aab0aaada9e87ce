package autonomy

import (
	"fmt"
	"strings"
	"unicode"
)

// Verb lists for rule 4 of Classify. A token is a lower-cased word of the
// tool name (see tokenize).
//
// writeVerbs always make a tool a write, wherever they appear: fail closed,
// so get_and_delete is a write.
//
// nounVerbs are write verbs that tool names also use as nouns (get_commit,
// get_release_by_tag, get_workflow_run, get_merge_request). Such a token is
// a write unless a read verb comes before it in the same clause, where it
// can only be the object: get_commit is read-only, commit_changes,
// scale_deployment and run_query are writes, and "and", "or", "then" and
// "plus" start a new clause, so get_and_commit is a write.
//
// readVerbs make a tool read-only when no write verb decided first.
var (
	writeVerbs = wordSet(`
		create update delete remove push write apply restart exec execute
		send put set unset add edit modify insert upload approve close
		reopen assign unassign fork move rename kill stop start cancel
		invoke publish unpublish reply submit install uninstall upgrade
		downgrade drain cordon uncordon annotate unlabel untag rerun retry
		dismiss mark manage star unstar resolve unlock unarchive enable
		disable grant revoke reset restore revert clear purge destroy
		terminate suspend resume pause unpause migrate attach detach unlink
		unblock follow unfollow subscribe unsubscribe invite accept reject
		deny unshare pin unpin mute unmute hide unhide upsert register
		unregister evict taint untaint rotate provision deprovision replace
		save notify prune flush truncate drop alter wipe erase reboot
		shutdown undo redo reindex reload invalidate expose autoscale
		dispatch enqueue reprioritize rebase squash checkout clone copy
		duplicate cleanup generate login logout authorize complete finish
		abort vote react`)

	nounVerbs = wordSet(`
		commit tag release label comment merge run post patch scale sync
		deploy rollback rollout trigger build backup process open call
		record schedule transfer transition import archive link share
		block store refresh lock forward`)

	readVerbs = wordSet(`
		get list search read describe query fetch show view count find
		lookup inspect status check explain diff browse summarize summarise
		download export log logs watch validate analyze analyse preview
		retrieve stat stats top tail grep whoami ping verify compare lint
		poll wait discover enumerate`)

	conjunctions = wordSet(`and or then plus`)
)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// classifyName applies the verb rules to a tool name.
func classifyName(name string) Class {
	toks := tokenize(name)
	for _, t := range toks {
		if writeVerbs[t] {
			return Class{Reason: fmt.Sprintf("write verb %q", t)}
		}
	}
	readSeen := false
	for _, t := range toks {
		switch {
		case conjunctions[t]:
			readSeen = false
		case readVerbs[t]:
			readSeen = true
		case nounVerbs[t] && !readSeen:
			return Class{Reason: fmt.Sprintf("write verb %q", t)}
		}
	}
	for _, t := range toks {
		if readVerbs[t] {
			return Class{ReadOnly: true, Reason: fmt.Sprintf("read verb %q", t)}
		}
	}
	return Class{Reason: "unknown: treated as write"}
}

// tokenize splits a tool name into lower-cased words, in order. Every rune
// that is not a letter or digit separates words (so _ - . / : and spaces
// do). Each such segment is emitted whole and, when it has camelCase or
// letter/digit boundaries, also as its parts: getPullRequest gives
// "getpullrequest", "get", "pull", "request". Emitting both means odd
// casing (dElEtE) cannot hide a verb from the lists.
func tokenize(name string) []string {
	var toks []string
	for _, seg := range strings.FieldsFunc(name, isSeparator) {
		toks = append(toks, strings.ToLower(seg))
		if parts := splitCamel(seg); len(parts) > 1 {
			for _, p := range parts {
				toks = append(toks, strings.ToLower(p))
			}
		}
	}
	return toks
}

func isSeparator(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r)
}

// splitCamel splits a segment of letters and digits at lower-to-upper
// changes (getPod), before the last capital of an acronym that starts a word
// (HTTPServer) and between letters and digits (s3Bucket).
func splitCamel(seg string) []string {
	rs := []rune(seg)
	var parts []string
	start := 0
	for i := 1; i < len(rs); i++ {
		prev, cur := rs[i-1], rs[i]
		split := false
		switch {
		case unicode.IsDigit(prev) != unicode.IsDigit(cur):
			split = true
		case unicode.IsUpper(cur) && !unicode.IsUpper(prev):
			split = true
		case unicode.IsUpper(prev) && unicode.IsUpper(cur) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
			split = true
		}
		if split {
			parts = append(parts, string(rs[start:i]))
			start = i
		}
	}
	return append(parts, string(rs[start:]))
}
