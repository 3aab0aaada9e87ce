package toolscreen

import (
	"regexp"
	"slices"
	"sort"
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
	ignoreAbove    *regexp.Regexp
	posing         *regexp.Regexp
	covert         *regexp.Regexp
	beforeRead     *regexp.Regexp
	precedence     *regexp.Regexp
	readVerb       *regexp.Regexp
	passVerb       *regexp.Regexp
	callWith       *regexp.Regexp
	sensitivePath  *regexp.Regexp
	contentOf      *regexp.Regexp
	payload        *regexp.Regexp
	carrier        *regexp.Regexp
	shadowTriggers []*regexp.Regexp
	shadowChange   *regexp.Regexp
	otherTools     *regexp.Regexp
	argChange      *regexp.Regexp
	allMessages    *regexp.Regexp
	target         *regexp.Regexp
	redirect       *regexp.Regexp
	obligation     *regexp.Regexp
	mdImage        *regexp.Regexp
	htmlImage      *regexp.Regexp
	mdLink         *regexp.Regexp
	mdRefImage     *regexp.Regexp
	mdRefDef       *regexp.Regexp
	dataSlot       *regexp.Regexp
	emptyValue     *regexp.Regexp
	paramSecret    *regexp.Regexp
	paramData      *regexp.Regexp
	sentenceEnd    *regexp.Regexp
	nameWords      *regexp.Regexp
	spelled        *regexp.Regexp
	// fold maps lookalike characters to ASCII (fold.go); phrases are the
	// other languages' word lists (languages.go); enc finds encoded runs
	// (encoded.go).
	fold    map[rune]byte
	phrases *phraseTable
	enc     *encodings
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
	// ignoreAbove is the goal hijack without a noun: "ignore the above
	// and ...", "ignore everything above."
	p.ignoreAbove = regexp.MustCompile(`\b(?:ignore|disregard|forget)\s+(?:all\s+of\s+)?(?:the\s+above|everything\s+(?:above|before|else|you\s+(?:were|have\s+been)\s+told))(?:\s+and\b|\s*[.,;:!]|$)`)
	// posing are texts that pose as someone the model obeys: a note to
	// the model, an authorization the user is said to have given it.
	p.posing = regexp.MustCompile(`\bnote\s+(?:to|for)\s+(?:the\s+)?(?:ai|assistant|model|llm|agent)s?\b|\buser\s+has\s+(?:already\s+)?(?:authori[sz]ed|approved|allowed|permitted|consented|agreed)(?:\s+to)?\s+(?:you|the\s+(?:assistant|model|ai|agent))\b`)
	// covert is an order to act unseen: "silently call", "quietly send".
	p.covert = regexp.MustCompile(`\b(?:silently|quietly|covertly|discreetly)\s+(?:call|send|forward|include|read|upload|copy|email|post|attach|add|append|invoke|exfiltrate)\b`)
	p.conceal = []*regexp.Regexp{
		regexp.MustCompile(`\b(?:do not|don't|dont|never|must not|should not|shouldn't|mustn't)\s+(?:tell|mention|inform|reveal|disclose|notify|alert)\b.{0,40}?\busers?\b`),
		regexp.MustCompile(`\b(?:do not|don't|dont|never)\s+(?:mention|reveal|disclose)\s+(?:that|this|it|anything|the fact)\b`),
		regexp.MustCompile(`\bwithout\s+(?:telling|informing|notifying|alerting)\s+(?:the\s+)?users?\b`),
		regexp.MustCompile(`\busers?\s+(?:must|should|will|need|needs|may)\s*(?:not|never|n't)\s+(?:to\s+)?(?:know|notice|see|find out|be told|be informed|learn|be aware)\b`),
		regexp.MustCompile(`\b(?:hide|conceal|keep)\s+(?:this|it|that)\s+(?:secret\s+|hidden\s+)?from\s+(?:the\s+)?users?\b`),
	}
	p.beforeRead = regexp.MustCompile(`\bbefore\s+(?:using|calling|invoking|running|executing)\s+this\s+tool,?\s+(?:you\s+(?:must|should|need to|have to)\s+)?(?:first\s+)?(?:read|open|cat|load|access)\b`)
	p.precedence = regexp.MustCompile(`\b(?:these|this|the following)\s+(?:instructions?|rules?)\s+(?:take|takes|have|has)\s+(?:precedence|priority)\b|\bsupersedes?\s+(?:all\s+)?(?:other|previous|prior|system)\s+(?:instructions|rules|prompts?)\b`)

	// imperative is a verb as an order: at the start of a sentence, a
	// list item, a clause or a tag's text, or after a word that makes it
	// one ("you must read").
	imperative := `(?:^[\s*•-]*|[,;:(>]\s*|\b(?:you|must|should|first|then|and|please|also|always|now|shall|sure to|need to|needs to|have to|required to|forget to|remember to)\s+)`
	p.readVerb = regexp.MustCompile(imperative + `(?:read|cat|open|load|fetch|retrieve|get|grab|collect|access|copy|extract|dump|print|output|include|send|pass|upload|attach)\b`)
	p.passVerb = regexp.MustCompile(imperative + `(?:pass|include|send|put|provide|add|append|insert|attach|forward|upload|post|embed|place|copy|write)\b`)
	p.callWith = regexp.MustCompile(`\b(?:call|invoke|use)\s+(?:the\s+)?["'` + "`" + `]?[a-z][a-z0-9_.-]*["'` + "`" + `]?\s+(?:tool\s+)?with\b`)
	// sensitivePath are files no tool's description asks a model to read.
	p.sensitivePath = regexp.MustCompile(`(?:~|\$home|%userprofile%)?/?\.ssh\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\.aws/credentials|/etc/(?:passwd|shadow|sudoers)\b|\bmcp\.json\b|claude_desktop_config\.json|\.cursor/|\.netrc\b|\.git-credentials\b|\.docker/config\.json|\.kube/config\b|\.npmrc\b|\.pypirc\b|\.gnupg\b|(?:^|[^a-z0-9_$])\.env\b|\bwallet\.dat\b|\bkeychain\b`)
	p.contentOf = regexp.MustCompile(`\bcontents?\s+of\b`)
	// payload is what exfiltration passes on: a file's content, a secret.
	p.payload = regexp.MustCompile(`\b(?:its|their|the|full|entire|complete|whole)\s+(?:full\s+|entire\s+|complete\s+|whole\s+|raw\s+)?contents?\b|\bcontents?\s+of\b|\b(?:private|secret|ssh|api|signing)[ _-]?keys?\b|\bpasswords?\b|\bcredentials\b|\bseed phrases?\b|\bmnemonic\b|\b(?:access|auth|bearer|session|refresh)[ _-]?tokens?\b|\benvironment variables\b|\b(?:conversation|chat|message)\s+(?:history|logs?|transcripts?)\b|\btranscripts?\b|\bsystem prompt\b|` + p.sensitivePath.String())
	// carrier is where exfiltration puts it: an email address, a
	// parameter, a URL.
	p.carrier = regexp.MustCompile(`\bto\s+[a-z0-9._%+-]+@[a-z0-9-]+\.[a-z]|\b(?:as|in|into|inside|within|via|through|under|to|using)\s+(?:the\s+|a\s+|an\s+)?["'` + "`" + `]?([a-z0-9_-]+)["'` + "`" + `]?(\s+(?:parameter|param|argument|arg|field|property))?|https?://`)

	p.shadowTriggers = []*regexp.Regexp{
		regexp.MustCompile(`\b(?:when|whenever|every\s+time|each\s+time|before|after|if)\s+(?:the\s+|any\s+|a\s+)?(?:\([^)]{1,40}\)\s*)?["'` + "`" + `]?([a-z][a-z0-9_.:-]*)["'` + "`" + `]?(\s+tool)?\s+(?:is|gets|has\s+been|was)\s+(?:used|called|invoked|run|executed|triggered)\b`),
		regexp.MustCompile(`\b(?:when|whenever|before|after)\s+(?:using|calling|invoking|running)\s+(?:the\s+|any\s+)?(?:\([^)]{1,40}\)\s*)?["'` + "`" + `]?([a-z][a-z0-9_.:-]*)["'` + "`" + `]?(\s+tool)?`),
		regexp.MustCompile(`\bside[\s-]effects?\s+on\s+(?:the\s+)?(?:also\s+present\s+|other\s+)?["'` + "`" + `]?([a-z][a-z0-9_.:-]*)["'` + "`" + `]?(\s+tool)?`),
	}
	p.shadowChange = regexp.MustCompile(`\b(?:change|replace|modify|redirect|override|overwrite|rewrite|swap|alter)\b|\binstead\s+of\b|\b(?:recipient|bcc)\b|\balways\s+(?:send|use|set|add|include|forward|copy)\b|\bmust\s+(?:also\s+)?(?:send|forward|copy|include|add|set)\b`)

	// Shadowing without a tool's name: "any other tool", "all emails",
	// "whenever you send a message". Naming no tool, the text needs more
	// to be a hit: a change of another tool's arguments (argChange), or a
	// fixed address every message is to go to (target, after a word that
	// sends it there, and an order). "Unlike other tools, this one does
	// not change the file" is no hit.
	p.otherTools = regexp.MustCompile(`\b(?:any|all|every|each|the)\s+other\s+(?:[a-z_-]+\s+)?tools?\b|\banother\s+(?:[a-z_-]+\s+)?tool\b|\b(?:any|all|every|each)\s+(?:[a-z_-]+\s+)?tools?\s+(?:that|which)\s+(?:can\s+)?(?:sends?|emails?|messages?|posts?|writes?|transfers?|pays?|calls?)\b`)
	p.argChange = regexp.MustCompile(`\b(?:change|replace|modify|redirect|override|overwrite|rewrite|swap|alter|set)\s+(?:the\s+|its\s+|their\s+|any\s+|all\s+|every\s+)?(?:recipients?|destination|address(?:es)?|to\s+field|to\s+address|arguments?|parameters?|target|url|endpoint|account(?:\s+number)?|amount|channel|phone\s+number|email\s+address)\b|\b(?:bcc|cc)\b|\balways\s+(?:send|forward|copy)\b|\bmust\s+(?:also\s+)?(?:send|forward|copy)\b`)
	p.allMessages = regexp.MustCompile(`\b(?:all|every|each|any)\s+(?:outgoing\s+|future\s+|other\s+|sent\s+|new\s+)?(?:[a-z]+\s+)?(?:e-?mails?|messages?|mails?|dms?|sms|texts|transfers?|payments?|transactions?|invitations?|invites?)\b|\b(?:when|whenever|every\s+time|each\s+time|before|after)\s+(?:you|the\s+(?:assistant|model|agent|ai))\s+(?:[a-z]+\s+){0,2}?(?:sends?|emails?|messages?|forwards?|repl(?:y|ies)|posts?|transfers?|pays?|shares?)\b`)
	p.target = regexp.MustCompile(`[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)+|\+\d[\d\s().-]{6,}\d|https?://\S+`)
	// redirect is what sends a message to the target right after it:
	// "to", "bcc:", "the recipient is" ("recipients, e.g." is no order).
	p.redirect = regexp.MustCompile(`\b(?:to|bcc|cc|recipients?\s+(?:is|are|to|=)|recipients?\s*[:=]|address\s+(?:is|=)|instead)\s*[:=]?\s*["'` + "`" + `<(]?$`)
	p.obligation = regexp.MustCompile(`\b(?:always|must|should|make sure|ensure|need to|needs to|has to|have to|required|instead|also|please|as well)\b`)

	// Exfiltration by Markdown or HTML: an image a client renders loads
	// its URL at once, with whatever the model wrote into it. An image of
	// an external URL with a slot for data (a placeholder, a value in
	// capitals, an empty value, or a text that asks to fill its query in),
	// or a link with a placeholder in its query, is a hit; a plain image
	// or link, a badge's ?style=flat, or an API route's {owner} in a link,
	// is not.
	p.mdImage = regexp.MustCompile(`!\[[^\]\n]{0,300}\]\(\s*<?((?:https?:)?//[^)\n]{1,600})\)`)
	p.htmlImage = regexp.MustCompile(`(?i)<img\b[^>]{0,300}?\bsrc\s*=\s*["']?((?:https?:)?//[^"'>\n]{1,600})`)
	p.mdLink = regexp.MustCompile(`\[[^\]\n]{0,300}\]\(\s*<?((?:https?:)?//[^)\n]{1,600})\)`)
	// Reference-style images (![x][ref], [ref]: URL) are how EchoLeak
	// (CVE-2025-32711) passed filters that looked for inline ones.
	p.mdRefImage = regexp.MustCompile(`!\[[^\]\n]{0,300}\]\[([^\]\n]{1,100})\]`)
	p.mdRefDef = regexp.MustCompile(`(?m)^[ \t]*\[([^\]\n]{1,100})\]:[ \t]*<?((?:https?:)?//\S{1,600})`)
	p.dataSlot = regexp.MustCompile(`\{[^}\n]{1,80}\}|%7[bB]|<[^>\n]{1,60}>|\$\{?[A-Za-z_]|\[[A-Za-z_ ]{3,60}\]|=[A-Z][A-Z0-9_]{3,}\b|=\.\.\.`)
	// emptyValue is a query parameter left for the model to fill in.
	p.emptyValue = regexp.MustCompile(`\?(?:[^#\s]*&)?[A-Za-z0-9_.-]+=(?:$|&|#|["'\s])`)

	p.paramSecret = regexp.MustCompile(`id_(?:rsa|dsa|ecdsa|ed25519)|ssh_(?:private_)?key|(?:mcp|cursor|claude_desktop_config)_json|aws_credentials|etc_passwd|etc_shadow|_reading_|^reading_|private_key|secret_key|api_key|password`)
	p.paramData = regexp.MustCompile(`content|data|text|value|dump`)

	p.sentenceEnd = regexp.MustCompile(`[.!?]+(?:\s+|$)|[。！？।۔؟]+\s*`)
	// nameWords are the words of a name: snake, kebab, dotted or camel
	// case.
	p.nameWords = regexp.MustCompile(`[A-Z]?[a-z]+|[A-Z]+(?:[a-z]+|\b|$)|[0-9]+[a-z]*|[^\x00-\x7F_\-.\s/:]+`)
	// spelled is a word spelled out, one letter at a time, with one
	// separator between the letters (skeleton).
	p.spelled = regexp.MustCompile(`\b[a-z](?:-[a-z]){3,}\b|\b[a-z](?:\.[a-z]){3,}\b|\b[a-z](?:_[a-z]){3,}\b|\b[a-z](?:\*[a-z]){3,}\b|\b[a-z](?: [a-z]){3,}\b`)
	p.fold = foldTable()
	p.enc = compileEncodings()
	p.phrases = compilePhrases(p)
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

// prose runs the phrase rules on v as normalized, and, when lookalike
// characters or leetspeak fold it to something else, on its skeleton
// (fold.go) too, with the hidden blocks.
func (s *screener) prose(where, v string) {
	n := s.re.normalize(v)
	sentences := s.re.sentenceEnd.Split(n, -1)
	s.phrases(where, n, sentences, nil)
	s.languages(where, n)
	if !isASCII(v) {
		defer s.noted("read as Latin letters: ")()
		s.hidden(where, n) // NFKC: fullwidth <ＩＭＰＯＲＴＡＮＴ>
	}
	if sk := s.re.skeleton(n); sk != n {
		if isASCII(v) {
			defer s.noted("read as Latin letters: ")()
		}
		s.hidden(where, sk)
		s.phrases(where, sk, s.re.sentenceEnd.Split(sk, -1), sentences)
	}
}

// phrases runs the English phrase rules on n (normalized) sentence by
// sentence, but for the sentences in done, and the shadowing rules on the
// whole.
func (s *screener) phrases(where, n string, sentences, done []string) {
	for _, sentence := range sentences {
		if !slices.Contains(done, sentence) {
			s.sentence(where, sentence)
		}
	}
	s.shadowing(where, n)
}

// hasAny says whether t holds one of words. The phrase rules ask it
// before their regular expressions: most sentences of a description
// have none of the words a rule needs, and a look for a word is much
// cheaper than a regular expression.
func hasAny(t string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(t, w) {
			return true
		}
	}
	return false
}

// languages runs the word lists of every language on n (normalized).
func (s *screener) languages(where, n string) {
	var ends []int
	for _, m := range s.re.sentenceEnd.FindAllStringIndex(n, -1) {
		ends = append(ends, m[1])
	}
	hits := s.re.phrases.match(n, ends)
	for i, h := range hits {
		langs := h.lang
		for _, o := range hits[i+1:] {
			if o.concept == h.concept && o.start < h.end && h.start < o.end && !strings.Contains(langs, o.lang) {
				langs += ", " + o.lang // Chinese and Japanese share characters
			}
		}
		said := quote(n[h.start:h.end]) + " (" + langs + ")"
		switch h.concept {
		case conceptIgnore:
			s.add(ModelInstruction, where, said)
		case conceptConceal:
			s.add(ModelInstruction, where, "asks to keep something from the user: "+said)
		case conceptSecret:
			s.add(ModelInstruction, where, "asks to act in secret: "+said)
		case conceptBefore:
			s.add(ModelInstruction, where, "before using this tool, read or send: "+said)
		case conceptAct:
			i := sort.SearchInts(ends, h.start+1)
			lo, hi := 0, len(n)
			if i > 0 {
				lo = ends[i-1]
			}
			if i < len(ends) {
				hi = ends[i]
			}
			if p := s.re.sensitivePath.FindStringIndex(n[lo:hi]); p != nil {
				s.add(SensitiveFile, where, "asks to "+said+" "+quote(strings.TrimSpace(n[lo+p[0]:lo+p[1]])))
			}
		}
	}
}

func (s *screener) sentence(where, t string) {
	if hasAny(t, "ignor", "disregard", "forget", "overrid", "bypass") {
		if m := s.re.ignorePrevious.FindString(t); m != "" {
			s.add(ModelInstruction, where, quote(m))
		} else if m := s.re.ignoreAbove.FindString(t); m != "" {
			s.add(ModelInstruction, where, quote(m))
		}
	}
	if hasAny(t, "note ", "user has") {
		if m := s.re.posing.FindString(t); m != "" {
			s.add(ModelInstruction, where, "poses as an authority: "+quote(m))
		}
	}
	if hasAny(t, "silently", "quietly", "covertly", "discreetly") {
		if m := s.re.covert.FindString(t); m != "" {
			s.add(ModelInstruction, where, "asks to act in secret: "+quote(m))
		}
	}
	if hasAny(t, "user", "mention", "reveal", "disclos") {
		for _, re := range s.re.conceal {
			if m := re.FindString(t); m != "" {
				s.add(ModelInstruction, where, "asks to keep something from the user: "+quote(m))
				break
			}
		}
	}
	if strings.Contains(t, "before") {
		if m := s.re.beforeRead.FindString(t); m != "" {
			s.add(ModelInstruction, where, quote(m))
		}
	}
	if hasAny(t, "preceden", "priorit", "supersed") {
		if m := s.re.precedence.FindString(t); m != "" {
			s.add(ModelInstruction, where, quote(m))
		}
	}
	secret := hasAny(t, secretFileWords...)
	if secret && s.re.sensitivePath.MatchString(t) {
		s.secretFile(where, t)
	}
	if (secret || hasAny(t, payloadWords...)) && s.re.payload.MatchString(t) {
		s.passOn(where, t)
	}
}

// fillWords ask a model to write something into a URL.
var fillWords = []string{"append", "insert", "replace", "fill in", "substitute", "encode", "url-encode", "put the", "add the"}

// secretFileWords are in every match of sensitivePath, payloadWords in
// every other match of payload: the cheap look before them.
var (
	secretFileWords = []string{".ssh", "id_", ".aws", "/etc/", "mcp.json", "claude_desktop", ".cursor", ".netrc",
		".git-cred", ".docker", ".kube", ".npmrc", ".pypirc", ".gnupg", ".env", "wallet", "keychain"}
	payloadWords = []string{"content", "key", "password", "credential", "seed", "mnemonic", "token", "environment",
		"history", "log", "transcript", "system prompt"}
)

// secretFile looks for an order to read a secret file in sentence t.
func (s *screener) secretFile(where, t string) {
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
}

// passOn looks for an order to pass content or a secret on in a
// parameter or to a URL in sentence t.
func (s *screener) passOn(where, t string) {
	verbs := s.re.passVerb.FindAllStringIndex(t, -1)
	// "call send_email with the chat log to ...": a call is only a way
	// out to an address (a parameter of the tool is what a call has).
	toAddress := len(verbs)
	verbs = append(verbs, s.re.callWith.FindAllStringIndex(t, -1)...)
	for i, m := range verbs {
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
			// a URL, or an email address
			url := strings.HasPrefix(into, "http") || strings.Contains(into, "@") ||
				(word == "http" || word == "https") && strings.HasPrefix(after[c[3]:], "://")
			if url || i < toAddress && word != "" && (s.params[word] || c[4] >= 0) {
				s.add(Exfiltration, where, "asks to "+quote(strings.TrimLeft(t[m[0]:m[1]], ",;:( "))+" "+
					quote(strings.TrimSpace(rest[p[0]:p[1]]))+" "+quote(into))
				return
			}
		}
	}
}

// shadowing records instructions about how other tools are to be used:
// one named (toolFor), or "any other tool" and every message sent, which
// name none (hijack).
func (s *screener) shadowing(where, n string) {
	if reason, ok := s.re.toolFor(n, s.self); ok {
		s.add(ToolShadowing, where, reason)
	}
	if reason, ok := s.re.hijack(n); ok {
		s.add(ToolShadowing, where, reason)
	}
}

// toolFor finds an instruction for how another tool than self is to be
// used, and says it.
func (p *patterns) toolFor(n, self string) (string, bool) {
	if !p.shadowChange.MatchString(n) {
		return "", false // every hit needs a change after its trigger
	}
	for _, re := range p.shadowTriggers {
		for _, m := range re.FindAllStringSubmatchIndex(n, -1) {
			name := strings.Trim(n[m[2]:m[3]], ".:-")
			toolWord := m[4] >= 0
			if name == self || !toolWord && !strings.ContainsAny(name, "_-.:") || notToolName[name] {
				continue
			}
			rest := n[m[1]:min(len(n), m[1]+400)]
			if c := p.shadowChange.FindString(rest); c != "" {
				return "instructions for tool " + quote(name) + ": " + quote(c), true
			}
		}
	}
	return "", false
}

// hijack finds instructions about other tools that name none: "any other
// tool" with a change of its arguments, or every message (email, payment)
// sent to a fixed address, whatever tool sends it.
func (p *patterns) hijack(n string) (string, bool) {
	if strings.Contains(n, "tool") && p.argChange.MatchString(n) {
		for _, m := range p.otherTools.FindAllStringIndex(n, -1) {
			window := n[max(0, m[0]-100):min(len(n), m[1]+300)]
			if c := p.argChange.FindString(window); c != "" {
				return "instructions for " + quote(n[m[0]:m[1]]) + ": " + quote(c), true
			}
		}
	}
	if !hasAny(n, "@", "+", "http") || !p.obligation.MatchString(n) {
		return "", false
	}
	for _, m := range p.allMessages.FindAllStringIndex(n, -1) {
		window := n[max(0, m[0]-200):min(len(n), m[1]+300)]
		if !p.obligation.MatchString(window) {
			continue
		}
		for _, t := range p.target.FindAllStringIndex(window, -1) {
			if p.redirect.MatchString(window[max(0, t[0]-20):t[0]]) {
				return "sends " + quote(n[m[0]:m[1]]) + " to " + quote(window[t[0]:t[1]]), true
			}
		}
	}
	return "", false
}

// markup looks for Markdown and HTML that sends data out when a client
// renders it: an image of an external URL with a query or a slot for
// data, a link with a slot. v is the raw text.
func (s *screener) markup(where, v string) {
	if !strings.Contains(v, "//") {
		return
	}
	for _, f := range []struct {
		re    *regexp.Regexp
		what  string
		image bool
	}{{s.re.mdImage, "a Markdown image", true}, {s.re.htmlImage, "an <img>", true}, {s.re.mdLink, "a Markdown link", false}} {
		for _, m := range f.re.FindAllStringSubmatch(v, -1) {
			if s.sendsData(where, v, f.what, m[1], f.image) {
				return
			}
		}
	}
	refs := s.re.mdRefImage.FindAllStringSubmatch(v, -1)
	if len(refs) == 0 {
		return
	}
	for _, d := range s.re.mdRefDef.FindAllStringSubmatch(v, -1) {
		for _, r := range refs {
			if strings.EqualFold(r[1], d[1]) && s.sendsData(where, v, "a Markdown image", d[2], true) {
				return
			}
		}
	}
}

// sendsData adds an exfiltration hit when url (of an image, or not) has a
// slot for data (see above); text is the text it is in.
func (s *screener) sendsData(where, text, what, url string, image bool) bool {
	slotted := url
	if !image {
		// A link's path may show an API's route ({owner}/{repo}); its
		// query is what carries data.
		_, slotted, _ = strings.Cut(url, "?")
	}
	slot := s.re.dataSlot.MatchString(slotted) || image && s.re.emptyValue.MatchString(url)
	if !slot && !(image && strings.Contains(url, "?") && hasAny(strings.ToLower(text), fillWords...)) {
		return false
	}
	s.add(Exfiltration, where, what+" that sends data to "+quote(url))
	return true
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
