// Package guidecheck finds the shell commands and the YAML manifests of a
// how-to guide written as plain text, and tells which of them the
// end-to-end scripts do not run or do not apply as written. The guide
// "Connect a compute cluster" is the product's main task; its end-to-end
// test claims to run all of it, and this package is how that claim is
// checked rather than trusted. A command or manifest the devstack cannot
// run as written is exempt only when the user guide in docs/ says why.
package guidecheck

import (
	"bufio"
	"regexp"
	"strings"
)

// commandStarts are the first words that open a command line in the
// guide. Prose never starts with them, and every command the guide gives
// does. The list also names tools the guide does not use today, such as
// git or curl, so a command of theirs added later is checked rather than
// read as prose; Unrecognized catches a tool this list does not name.
var commandStarts = []string{
	"kubectl ", "openstack ", "helm ", "printf ", "IFS=", "unset ", "jq ", "make ",
	"chainsaw ", "go ", "git ", "curl ", "cat ", "export ", "base64 ", "flux ", "anvil ", "anvil-dev ",
}

// assignment matches a shell variable assignment that opens a command,
// such as `zone="$(kubectl ...` or `host=<node>`.
var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=\S`)

// heredoc finds the delimiter of a here-document a command opens. A
// here-string (<<<) opens none, so a third < before or after is no match.
var heredoc = regexp.MustCompile(`(?:^|[^<])<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

// Extract returns the guide's commands in order, each one logical line:
// continuation lines joined, whitespace collapsed. Here-document bodies are
// left out; the line that opens one is the command.
func Extract(text string) []string {
	var (
		out     []string
		cur     []string
		endDoc  string
		scanner = bufio.NewScanner(strings.NewReader(text))
	)
	for scanner.Scan() {
		line := scanner.Text()
		if endDoc != "" {
			if strings.TrimSpace(line) == endDoc {
				endDoc = ""
			}
			continue
		}
		if cur == nil && !opensCommand(line) {
			continue
		}
		cur = append(cur, strings.TrimSuffix(strings.TrimSpace(line), `\`))
		// A trailing backslash continues the command, and so does a
		// single-quoted argument, such as a JSON patch, left open.
		if strings.HasSuffix(strings.TrimSpace(line), `\`) || strings.Count(strings.Join(cur, " "), "'")%2 == 1 {
			continue
		}
		cmd := Normalize(strings.Join(cur, " "))
		cur = nil
		out = append(out, cmd)
		if m := heredoc.FindStringSubmatch(cmd); m != nil {
			endDoc = m[1]
		}
	}
	return out
}

// opensCommand tells whether a line of the guide starts a command.
func opensCommand(line string) bool {
	for _, s := range commandStarts {
		if strings.HasPrefix(line, s) {
			return true
		}
	}
	return assignment.MatchString(line) && !strings.Contains(line, ". ")
}

// Normalize collapses runs of whitespace to one space and trims the ends,
// so a command compares equal however it was wrapped.
func Normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// placeholder matches the guide's placeholders, such as <node>.
var placeholder = regexp.MustCompile(`<[a-z][a-z -]*>`)

// pattern turns a guide command into a regular expression: literal text,
// except that a placeholder matches any one word, since a script fills it
// with a real node or namespace name.
func pattern(cmd string) *regexp.Regexp {
	var b strings.Builder
	last := 0
	for _, loc := range placeholder.FindAllStringIndex(cmd, -1) {
		b.WriteString(regexp.QuoteMeta(cmd[last:loc[0]]))
		b.WriteString(`\S+`)
		last = loc[1]
	}
	b.WriteString(regexp.QuoteMeta(cmd[last:]))
	return regexp.MustCompile(b.String())
}

// Flatten joins a script's continuation lines and collapses whitespace in
// each logical line, the form Missing searches.
func Flatten(script string) string {
	var b strings.Builder
	for _, line := range strings.Split(script, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasSuffix(t, `\`) {
			b.WriteString(strings.TrimSuffix(t, `\`))
			b.WriteByte(' ')
			continue
		}
		b.WriteString(t)
		b.WriteByte('\n')
	}
	var out strings.Builder
	for _, line := range strings.Split(b.String(), "\n") {
		out.WriteString(Normalize(line))
		out.WriteByte('\n')
	}
	return out.String()
}

// Missing returns the commands that no script runs and no exemption
// covers. An exemption is a prefix of the normalized command; scripts are
// searched after Flatten.
func Missing(commands, scripts, exempt []string) []string {
	flat := make([]string, len(scripts))
	for i, s := range scripts {
		flat[i] = Flatten(s)
	}
	var out []string
	for _, cmd := range commands {
		if isExempt(cmd, exempt) {
			continue
		}
		re := pattern(cmd)
		found := false
		for _, s := range flat {
			if re.MatchString(s) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, cmd)
		}
	}
	return out
}

func isExempt(cmd string, exempt []string) bool {
	for _, e := range exempt {
		if e = Normalize(e); e != "" && strings.HasPrefix(cmd, e) {
			return true
		}
	}
	return false
}

// exemptionRow matches a row of the user guide's table of commands the
// devstack does not run: | `command prefix` | reason |.
var exemptionRow = regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|\\s*(.*\\S)\\s*\\|\\s*$")

// Exemptions reads the table under the heading section of a Markdown
// guide: each row names a command prefix and the reason the devstack does
// not run it. A row without a reason is no exemption.
func Exemptions(markdown, section string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(markdown, "\n") {
		if strings.HasPrefix(line, "#") {
			in = strings.TrimSpace(strings.TrimLeft(line, "#")) == section
			continue
		}
		if !in {
			continue
		}
		if m := exemptionRow.FindStringSubmatch(line); m != nil && strings.Trim(m[2], "- ") != "" {
			out = append(out, strings.ReplaceAll(m[1], `\|`, "|"))
		}
	}
	return out
}

// bareWord matches a line that opens with a lowercase word and a space, the
// way a command does; the guide's sentences open with a capital, a bullet
// or a word with punctuation, such as `port:`.
var bareWord = regexp.MustCompile(`^[a-z][a-z0-9_-]* `)

// Unrecognized returns the lines of the guide that look like a command of
// a tool commandStarts does not name: they open with a bare lowercase word
// and, unlike the guide's sentences, end in neither a full stop nor a
// colon. Extract would read such a command as prose, so the check names it
// instead of passing without it.
func Unrecognized(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if !bareWord.MatchString(line) || opensCommand(line) || strings.HasSuffix(t, ".") || strings.HasSuffix(t, ":") {
			continue
		}
		out = append(out, t)
	}
	return out
}
