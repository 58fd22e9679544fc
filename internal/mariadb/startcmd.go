package mariadb

import (
	"fmt"
	"strings"
)

// StartCommandSource is where a server started by command (a shell
// command line that runs mariadbd) takes its options from: the option
// files its words choose (--no-defaults, --defaults-file,
// --defaults-extra-file, else the global files) and the options among
// its words. argsFrom names the command for Setting.From.
func StartCommandSource(command, argsFrom string) (ServerSource, error) {
	words, err := ShellWords(command)
	if err != nil {
		return ServerSource{}, err
	}
	src := ServerSource{ArgsFrom: argsFrom}
	for _, w := range words {
		switch {
		case w == "--no-defaults":
			src.NoDefaults = true
		case strings.HasPrefix(w, "--defaults-file="):
			src.DefaultsFile = strings.TrimPrefix(w, "--defaults-file=")
		case strings.HasPrefix(w, "--defaults-extra-file="):
			src.DefaultsExtraFile = strings.TrimPrefix(w, "--defaults-extra-file=")
		case strings.HasPrefix(w, "--"):
			src.Args = append(src.Args, w)
		}
	}
	return src, nil
}

// ShellWords splits a command into words as /bin/sh would for simple
// commands: blanks separate words, single quotes keep everything, double
// quotes and backslashes work as in the shell. Expansions are not done.
func ShellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			continue
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated quote in %q", s)
			}
			w.WriteString(s[i+1 : i+1+end])
			i += end + 1
		case c == '"':
			n, ok := doubleQuoted(&w, s[i+1:])
			if !ok {
				return nil, fmt.Errorf("unterminated quote in %q", s)
			}
			i += n + 1
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
		default:
			w.WriteByte(c)
		}
		inWord = true
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// doubleQuoted writes the content of a double-quoted string that rest
// follows the opening quote of, and returns how many bytes of rest it
// took up to its closing quote, or false if it has none.
func doubleQuoted(w *strings.Builder, rest string) (int, bool) {
	for i := 0; i < len(rest); i++ {
		switch {
		case rest[i] == '"':
			return i, true
		case rest[i] == '\\' && i+1 < len(rest) && strings.IndexByte("$`\"\\\n", rest[i+1]) >= 0:
			i++
		}
		w.WriteByte(rest[i])
	}
	return 0, false
}
