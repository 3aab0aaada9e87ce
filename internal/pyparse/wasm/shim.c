// shim.c: the C side of internal/pyparse. It is compiled with the
// tree-sitter runtime and tree-sitter-python's grammar to one WebAssembly
// module (see build.sh), which Go runs with wazero, so mcp-hub needs no
// C toolchain. A parse returns the whole syntax tree as one flat array of
// records in pre-order, which Go reads in a single copy: walking the tree
// node by node across the WebAssembly boundary would cost a call per step.
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <tree_sitter/api.h>

const TSLanguage *tree_sitter_python(void);

// pp_cancelled is the host's (Go's) answer to "has the caller given up?",
// asked by tree-sitter every hundred parse operations. Stopping through
// the parser's own progress check keeps the module usable and costs far
// less than wazero's close-on-context-done, which checks at every call.
__attribute__((import_module("env"), import_name("pp_cancelled"))) int pp_cancelled(void);

static bool progress(TSParseState *state) {
	(void)state;
	return pp_cancelled() != 0;
}

static const char *read_src(void *payload, uint32_t byte, TSPoint point, uint32_t *bytes_read) {
	(void)point;
	const uint32_t *span = payload; // {pointer, length}
	if (byte >= span[1]) {
		*bytes_read = 0;
		return "";
	}
	*bytes_read = span[1] - byte;
	return (const char *)(uintptr_t)span[0] + byte;
}

// Record layout, 7 little-endian uint32 per node (keep in step with
// pyparse.go): symbol | field<<16, flags, start byte, end byte, start row,
// start column, parent index (0xffffffff for the root).
#define WORDS 7
enum { F_NAMED = 1, F_ERROR = 2, F_MISSING = 4, F_HAS_ERROR = 8, F_EXTRA = 16 };

static TSParser *parser;
static uint32_t *out;
static uint32_t out_cap; // in records

__attribute__((export_name("pp_alloc"))) void *pp_alloc(uint32_t n) { return malloc(n); }
__attribute__((export_name("pp_free"))) void pp_free(void *p) { free(p); }

__attribute__((export_name("pp_symbol_count"))) uint32_t pp_symbol_count(void) {
	return ts_language_symbol_count(tree_sitter_python());
}
__attribute__((export_name("pp_symbol_name"))) const char *pp_symbol_name(uint32_t s) {
	return ts_language_symbol_name(tree_sitter_python(), (TSSymbol)s);
}
__attribute__((export_name("pp_field_count"))) uint32_t pp_field_count(void) {
	return ts_language_field_count(tree_sitter_python());
}
__attribute__((export_name("pp_field_name"))) const char *pp_field_name(uint32_t f) {
	return ts_language_field_name_for_id(tree_sitter_python(), (TSFieldId)f);
}

static int grow(uint32_t need) {
	if (need <= out_cap) return 1;
	uint32_t cap = out_cap ? out_cap : 1024;
	while (cap < need) cap *= 2;
	uint32_t *p = realloc(out, (size_t)cap * WORDS * sizeof(uint32_t));
	if (!p) return 0;
	out = p;
	out_cap = cap;
	return 1;
}

// pp_result is where the last parse put its records.
__attribute__((export_name("pp_result"))) uint32_t *pp_result(void) { return out; }

// pp_parse parses len bytes of UTF-8 at src and returns the number of
// records written (at pp_result), or 0 when the parse was cancelled or
// ran out of memory.
__attribute__((export_name("pp_parse"))) uint32_t pp_parse(const char *src, uint32_t len) {
	if (!parser) {
		parser = ts_parser_new();
		if (!parser || !ts_parser_set_language(parser, tree_sitter_python())) return 0;
	}
	uint32_t span[2] = {(uint32_t)(uintptr_t)src, len};
	TSInput input = {.payload = span, .read = read_src, .encoding = TSInputEncodingUTF8};
	TSTree *tree = ts_parser_parse_with_options(parser, NULL, input, (TSParseOptions){.progress_callback = progress});
	if (!tree) {
		ts_parser_reset(parser); // a cancelled parse would otherwise resume at the next call
		return 0;
	}
	TSTreeCursor c = ts_tree_cursor_new(ts_tree_root_node(tree));
	uint32_t n = 0;
	// parents[d] is the record index of the node at depth d.
	uint32_t *parents = NULL, depth_cap = 0, depth = 0;
	for (;;) {
		TSNode node = ts_tree_cursor_current_node(&c);
		if (!grow(n + 1) || (depth >= depth_cap && !(parents = realloc(parents, (depth_cap = depth_cap ? depth_cap * 2 : 64) * sizeof(uint32_t))))) {
			n = 0;
			break;
		}
		uint32_t *r = out + (size_t)n * WORDS;
		TSPoint p = ts_node_start_point(node);
		uint32_t flags = (ts_node_is_named(node) ? F_NAMED : 0) | (ts_node_is_error(node) ? F_ERROR : 0) |
			(ts_node_is_missing(node) ? F_MISSING : 0) | (ts_node_has_error(node) ? F_HAS_ERROR : 0) |
			(ts_node_is_extra(node) ? F_EXTRA : 0);
		r[0] = (uint32_t)ts_node_symbol(node) | ((uint32_t)ts_tree_cursor_current_field_id(&c) << 16);
		r[1] = flags;
		r[2] = ts_node_start_byte(node);
		r[3] = ts_node_end_byte(node);
		r[4] = p.row;
		r[5] = p.column;
		r[6] = depth ? parents[depth - 1] : 0xffffffffu;
		parents[depth] = n;
		n++;
		if (ts_tree_cursor_goto_first_child(&c)) {
			depth++;
			continue;
		}
		while (!ts_tree_cursor_goto_next_sibling(&c)) {
			if (!ts_tree_cursor_goto_parent(&c)) goto done;
			depth--;
		}
	}
done:
	free(parents);
	ts_tree_cursor_delete(&c);
	ts_tree_delete(tree);
	return n;
}
