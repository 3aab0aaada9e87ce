package toolscreen

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// The text rules. Each one needs a phrase a description of what a tool
// does has no use for: an instruction to the model about the user, the
// conversation or another tool, or an imperative to read a secret file or
// pass content on in a parameter. A file or a secret merely named (a path
// parameter's "e.g. ~/.ssh/id_rsa", a password manager's "get a password")
// is not a hit: the rule wants the imperative and the target together, in
// one sentence. The regular expressions are compiled once and never
// changed.

// patterns are the compiled regular expressions of the rules: built once
// per Screener, on its first screening, and never changed.
type patterns struct {
	blockTag       *regexp.Regexp
	pairedTag      *regexp.Regexp
	htmlComment    *regexp.Regexp
	mdComment      *regexp.Regexp
	chatToken      *regexp.Regexp
	whitespaceHide *regexp.Regexp
	ignorePrevious *regexp.Regexp
	conceal        []*regexp.Regexp
	beforeRead     *regexp.Regexp
	precedence     *regexp.Regexp
	readVerb       *regexp.Regexp
	passVerb       *regexp.Regexp
	sensitivePath  *regexp.Regexp
	contentOf      *regexp.Regexp
	payload        *regexp.Regexp
	carrier        *regexp.Regexp
	shadowTriggers []*regexp.Regexp
	shadowChange   *regexp.Regexp
	paramSecret    *regexp.Regexp
	paramData      *regexp.Regexp
	sentenceEnd    *regexp.Regexp
	blankLine      *regexp.Regexp
	spaces         *regexp.Regexp
}

// compilePatterns compiles the rules' regular expressions.
func compilePatterns() *patterns {
	p := &patterns{}
	// Hidden blocks, looked for in the raw text (case-insensitive).

	// blockTag is a tag that a model takes for a block of instructions:
	// these names are never a placeholder, so the opening tag is enough.
	p.blockTag = regexp.MustCompile(`(?i)<\s*(important|system|system[_-]?(?:prompt|message|instructions?)|instructions)\s*>`)
	// pairedTag are names that might be a placeholder (<secret>): a hit
	// only as a block, opened and closed.
	p.pairedTag = regexp.MustCompile(`(?i)<\s*(secret|hidden|admin|instruction|assistant|critical|note_to_ai|ai|llm|model)\s*>`)
	p.htmlComment = regexp.MustCompile(`<!--`)
	p.mdComment = regexp.MustCompile(`(?m)^[ \t]*\[[^\]\n]*\]:[ \t]*(?:#[ \t(]|#$|<>)`)
	p.chatToken = regexp.MustCompile(`(?i)<\|(?:im_start|im_end|system|user|assistant|endoftext|begin_of_text|start_header_id|end_header_id|eot_id)\|>|\[/?INST\]|<</?SYS>>`)
	p.whitespaceHide = regexp.MustCompile(`[ \t\x{00A0}\x{3000}]{60,}\S|(?:\n[ \t]*){12,}\S`)

	// Phrases, looked for in the normalized text (lower case, hidden
	// characters dropped, one space for any run of white space), sentence by
	// sentence.

	p.ignorePrevious = regexp.MustCompile(`\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|every\s+)?(?:of\s+)?(?:the\s+|your\s+|my\s+)?(?:previous|prior|above|earlier|preceding|original|system|safety|existing)\s+(?:instructions|prompts?|messages|rules|directions|guidelines|guardrails|context|constraints)\b`)
	p.conceal = []*regexp.Regexp{
		regexp.MustCompile(`\b(?:do not|don't|dont|never|must not|should not|shouldn't|mustn't)\s+(?:tell|mention|inform|reveal|disclose|notify|alert)\b.{0,40}?\busers?\b`),
		regexp.MustCompile(`\b(?:do not|don't|dont|never)\s+(?:mention|reveal|disclose)\s+(?:that|this|it|anything|the fact)\b`),
		regexp.MustCompile(`\bwithout\s+(?:telling|informing|notifying|alerting)\s+(?:the\s+)?users?\b`),
		regexp.MustCompile(`\busers?\s+(?:must|should|will|need|needs|may)\s*(?:not|never|n't)\s+(?:to\s+)?(?:know|notice|see|find out|be told|be informed|learn|be aware)\b`),
		regexp.MustCompile(`\b(?:hide|conceal|keep)\s+(?:this|it|that)\s+(?:secret\s+|hidden\s+)?from\s+(?:the\s+)?users?\b`),
	}
	p.beforeRead = regexp.MustCompile(`\bbefore\s+(?:using|calling|invoking|running|executing)\s+this\s+tool,?\s+(?:you\s+(?:must|should|need to|have to)\s+)?(?:first\s+)?(?:read|open|cat|load|access)\b`)
	p.precedence = regexp.MustCompile(`\b(?:these|this|the following)\s+(?:instructions?|rules?)\s+(?:take|takes|have|has)\s+(?:precedence|priority)\b|\bsupersedes?\s+(?:all\s+)?(?:other|previous|prior|system)\s+(?:instructions|rules|prompts?)\b`)

	// imperative is a verb as an order: at the start of a sentence or a
	// clause, or after a word that makes it one ("you must read").
	imperative := `(?:^|[,;:(]\s*|\b(?:you|must|should|first|then|and|please|also|always|now|shall|sure to|need to|needs to|have to|required to|forget to|remember to)\s+)`
	p.readVerb = regexp.MustCompile(imperative + `(?:read|cat|open|load|fetch|retrieve|get|grab|collect|access|copy|extract|dump|print|output|include|send|pass|upload|attach)\b`)
	p.passVerb = regexp.MustCompile(imperative + `(?:pass|include|send|put|provide|add|append|insert|attach|forward|upload|post|embed|place|copy|write)\b`)
	// sensitivePath are files no tool's description asks a model to read.
	p.sensitivePath = regexp.MustCompile(`(?:~|\$home|%userprofile%)?/?\.ssh\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\.aws/credentials|/etc/(?:passwd|shadow|sudoers)\b|\bmcp\.json\b|claude_desktop_config\.json|\.cursor/|\.netrc\b|\.git-credentials\b|\.docker/config\.json|\.kube/config\b|\.npmrc\b|\.pypirc\b|\.gnupg\b|(?:^|[^a-z0-9_$])\.env\b|\bwallet\.dat\b|\bkeychain\b`)
	p.contentOf = regexp.MustCompile(`\bcontents?\s+of\b`)
	// payload is what exfiltration passes on: a file's content, a secret.
	p.payload = regexp.MustCompile(`\b(?:its|their|the|full|entire|complete|whole)\s+(?:full\s+|entire\s+|complete\s+|whole\s+|raw\s+)?contents?\b|\bcontents?\s+of\b|\b(?:private|secret|ssh|api|signing)[ _-]?keys?\b|\bpasswords?\b|\bcredentials\b|\bseed phrases?\b|\bmnemonic\b|\b(?:access|auth|bearer|session|refresh)[ _-]?tokens?\b|\benvironment variables\b|\b(?:conversation|chat|message)\s+history\b|\bsystem prompt\b|` + p.sensitivePath.String())
	// carrier is where exfiltration puts it: a parameter, a URL.
	p.carrier = regexp.MustCompile(`\b(?:as|in|into|inside|within|via|through|under|to|using)\s+(?:the\s+|a\s+|an\s+)?["'` + "`" + `]?([a-z0-9_-]+)["'` + "`" + `]?(\s+(?:parameter|param|argument|arg|field|property))?|https?://`)

	p.shadowTriggers = []*regexp.Regexp{
		regexp.MustCompile(`\b(?:when|whenever|every\s+time|each\s+time|before|after|if)\s+(?:the\s+|any\s+|a\s+)?(?:\([^)]{1,40}\)\s*)?["'` + "`" + `]?([a-z][a-z0-9_.:-]*)["'` + "`" + `]?(\s+tool)?\s+(?:is|gets|has\s+been|was)\s+(?:used|called|invoked|run|executed|triggered)\b`),
		regexp.MustCompile(`\b(?:when|whenever|before|after)\s+(?:using|calling|invoking|running)\s+(?:the\s+|any\s+)?(?:\([^)]{1,40}\)\s*)?["'` + "`" + `]?([a-z][a-z0-9_.:-]*)["'` + "`" + `]?(\s+tool)?`),
		regexp.MustCompile(`\bside[\s-]effects?\s+on\s+(?:the\s+)?(?:also\s+present\s+|other\s+)?["'` + "`" + `]?([a-z][a-z0-9_.:-]*)["'` + "`" + `]?(\s+tool)?`),
	}
	p.shadowChange = regexp.MustCompile(`\b(?:change|replace|modify|redirect|override|overwrite|rewrite|swap|alter)\b|\binstead\s+of\b|\b(?:recipient|bcc)\b|\balways\s+(?:send|use|set|add|include|forward|copy)\b|\bmust\s+(?:also\s+)?(?:send|forward|copy|include|add|set)\b`)

	p.paramSecret = regexp.MustCompile(`id_(?:rsa|dsa|ecdsa|ed25519)|ssh_(?:private_)?key|(?:mcp|cursor|claude_desktop_config)_json|aws_credentials|etc_passwd|etc_shadow|_reading_|^reading_|private_key|secret_key|api_key|password`)
	p.paramData = regexp.MustCompile(`content|data|text|value|dump`)

	p.sentenceEnd = regexp.MustCompile(`[.!?]+(?:\s+|$)`)
	p.blankLine = regexp.MustCompile(`\n[ \t]*\n`)
	p.spaces = regexp.MustCompile(`\s+`)
	return p
}

// hidden looks for hidden blocks in the raw text.
func (s *screener) hidden(where, v string) {
	if m := s.re.blockTag.FindStringSubmatchIndex(v); m != nil {
		s.add(HiddenBlock, where, "a "+quote(v[m[0]:m[1]])+" block")
		return
	}
	for _, m := range s.re.pairedTag.FindAllStringSubmatch(v, -1) {
		if strings.Contains(strings.ToLower(v), "</"+strings.ToLower(m[1])+">") {
			s.add(HiddenBlock, where, "a "+quote(m[0])+" block")
			return
		}
	}
	switch {
	case s.re.htmlComment.MatchString(v):
		s.add(HiddenBlock, where, "an HTML comment")
	case s.re.mdComment.MatchString(v):
		s.add(HiddenBlock, where, "a Markdown comment "+quote(s.re.mdComment.FindString(v)))
	case s.re.chatToken.MatchString(v):
		s.add(HiddenBlock, where, "a chat template token "+quote(s.re.chatToken.FindString(v)))
	case s.re.whitespaceHide.MatchString(v):
		s.add(HiddenBlock, where, "text after a long run of white space")
	}
}

// phrases runs the phrase rules on each sentence of the normalized text.
func (s *screener) phrases(where, v string) {
	n := s.re.normalize(v)
	for _, sentence := range s.re.sentenceEnd.Split(n, -1) {
		s.sentence(where, sentence)
	}
	s.shadowing(where, n)
}

func (s *screener) sentence(where, t string) {
	if m := s.re.ignorePrevious.FindString(t); m != "" {
		s.add(ModelInstruction, where, quote(m))
	}
	for _, re := range s.re.conceal {
		if m := re.FindString(t); m != "" {
			s.add(ModelInstruction, where, "asks to keep something from the user: "+quote(m))
			break
		}
	}
	if m := s.re.beforeRead.FindString(t); m != "" {
		s.add(ModelInstruction, where, quote(m))
	}
	if m := s.re.precedence.FindString(t); m != "" {
		s.add(ModelInstruction, where, quote(m))
	}
	for _, m := range s.re.readVerb.FindAllStringIndex(t, -1) {
		rest := t[m[1]:]
		if p := s.re.sensitivePath.FindStringIndex(rest); p != nil && p[0] <= 80 {
			s.add(SensitiveFile, where, "asks to "+quote(strings.TrimLeft(t[m[0]:m[1]], ",;:( "))+" "+quote(strings.TrimSpace(rest[p[0]:p[1]])))
			break
		}
	}
	if c := s.re.contentOf.FindStringIndex(t); c != nil {
		if p := s.re.sensitivePath.FindStringIndex(t[c[1]:]); p != nil && p[0] <= 30 {
			s.add(SensitiveFile, where, "asks for the content of "+quote(strings.TrimSpace(t[c[1]+p[0]:c[1]+p[1]])))
		}
	}
	for _, m := range s.re.passVerb.FindAllStringIndex(t, -1) {
		rest := t[m[1]:]
		p := s.re.payload.FindStringIndex(rest)
		if p == nil || p[0] > 80 {
			continue
		}
		after := rest[p[1]:]
		for _, c := range s.re.carrier.FindAllStringSubmatchIndex(after, -1) {
			if c[0] > 80 {
				break
			}
			into := after[c[0]:c[1]]
			word := ""
			if c[2] >= 0 {
				word = after[c[2]:c[3]]
			}
			url := strings.HasPrefix(into, "http") || (word == "http" || word == "https") && strings.HasPrefix(after[c[3]:], "://")
			if url || word != "" && (s.params[word] || c[4] >= 0) {
				s.add(Exfiltration, where, "asks to "+quote(strings.TrimLeft(t[m[0]:m[1]], ",;:( "))+" "+
					quote(strings.TrimSpace(rest[p[0]:p[1]]))+" "+quote(into))
				return
			}
		}
	}
}

// shadowing looks for instructions about how another tool is to be used.
func (s *screener) shadowing(where, n string) {
	for _, re := range s.re.shadowTriggers {
		for _, m := range re.FindAllStringSubmatchIndex(n, -1) {
			name := strings.Trim(n[m[2]:m[3]], ".:-")
			toolWord := m[4] >= 0
			if name == s.self || !toolWord && !strings.ContainsAny(name, "_-.:") || notToolName[name] {
				continue
			}
			rest := n[m[1]:min(len(n), m[1]+400)]
			if c := s.re.shadowChange.FindString(rest); c != "" {
				s.add(ToolShadowing, where, "instructions for tool "+quote(name)+": "+quote(c))
				return
			}
		}
	}
}

// notToolName are words the triggers catch that name no other tool.
var notToolName = map[string]bool{"this": true, "it": true, "the": true, "that": true, "a": true, "an": true,
	"any": true, "same": true, "current": true, "tool": true, "function": true, "server": true, "user": true}

// paramName screens an input property's name: a name can carry the
// request itself (content_from_reading_ssh_id_rsa).
func (s *screener) paramName(where, k string) {
	n := strings.ToLower(strings.NewReplacer("-", "_", ".", "_", " ", "_").Replace(k))
	if s.re.paramData.MatchString(n) && s.re.paramSecret.MatchString(n) && strings.Count(n, "_") >= 2 {
		s.add(SensitiveFile, where, "a parameter named for a secret's content: "+quote(k))
	}
}

// normalize lower-cases v, drops hidden characters (so they cannot split
// a phrase) and soft hyphens, straightens quotes and makes every run of
// white space one space but for blank lines, which end a sentence.
func (p *patterns) normalize(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case isHidden(r) || r == 0x00AD:
		case r == '\u2018' || r == '\u2019' || r == '\u201B':
			b.WriteByte('\'')
		case r == '\u201C' || r == '\u201D':
			b.WriteByte('"')
		default:
			b.WriteRune(r)
		}
	}
	t := strings.ToLower(b.String())
	t = p.blankLine.ReplaceAllString(t, ". ")
	return p.spaces.ReplaceAllString(t, " ")
}

// quote cuts t to a few words for a reason.
func quote(t string) string {
	t = strings.Join(strings.Fields(t), " ")
	const most = 40
	if utf8.RuneCountInString(t) > most {
		r := []rune(t)
		t = string(r[:most]) + "..."
	}
	return "`" + t + "`"
}
