// Package options defines every option of every command once, in one
// table (table.go, as pgBackRest's config.yaml does): its name and
// shorthand, its kind, default and help (each with per-command variants
// where commands differ), the commands that take it, its help heading,
// and how option files and the environment may set it. It documents
// every command once too, in a second table (commands.go): its usage
// line, its summary, its description and its examples. Each kind of
// value has its one parser here (values.go), which the flag runs as it
// is set, so that the command line and option files read a value alike.
// The command binds its flags from here by name alone and takes its help
// texts from here by its name; option files (files.go), config's output,
// help's flag groups (help.go) and the connection options resolved into
// a connection (conn.go) are read from the same tables. It knows what an
// option and a command are for the user, never what they do: no
// command's checks or logic.
package options

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Kind is the kind of value an option takes.
type Kind int

// The kinds of value. A flag of a kind with a parser (values.go) parses
// and checks its value as it is set, from the command line or an option
// file alike.
const (
	Bool       Kind = iota + 1
	Int             // a whole number
	String          // text
	Size            // a byte count, e.g. 512MiB or 1G
	Rate            // bytes per second, e.g. 50MiB/s
	Duration        // Go's durations, e.g. 90s or 2m
	Span            // a span that may count days and weeks, e.g. 6d12h or 2w
	Repeatable      // text, one value per occurrence, never split at commas
	List            // comma-separated text, repeatable too
)

var kindNames = map[Kind]string{Bool: "boolean", Int: "integer", String: "text", Size: "size", Rate: "rate",
	Duration: "duration", Span: "span", Repeatable: "repeatable", List: "list"}

func (k Kind) String() string { return kindNames[k] }

// Group is the heading a command's help shows an option under.
type Group string

// The headings, in the order help shows them; an option of no other
// group is under General.
const (
	General     Group = "Options"
	OptionFiles Group = "Option files"
	Connection  Group = "Connection"
	Repository  Group = "Repository"
	Performance Group = "Performance and impact"
	Filters     Group = "Filters"
	Security    Group = "Security"
	Output      Group = "Output"
)

// Groups are the headings in help's order.
var Groups = []Group{General, OptionFiles, Connection, Repository, Performance, Filters, Security, Output}

// Why option files cannot set an option (Option.CommandLineOnly).
const (
	ChoosesFiles     = "it chooses the option files read"
	ClientConnection = "the connection resolver reads it from the option files itself, with the mariadb client's groups; config shows it in the connection resolved"
	ClientTLS        = "the connection resolver reads it from the option files itself, with the mariadb client's groups"
	NotAnOption      = "it asks for help or the version instead of running the command"
)

// Root is the name of the command every other is under; an option of
// Root alone is given before any command.
const Root = "backstream"

// Option is one option as the table defines it.
type Option struct {
	Name  string
	Short string // the one-letter shorthand, if any
	Kind  Kind
	// Default is the value when none is given: a bool, int, string or
	// time.Duration as Kind takes it, NumCPU, or nil for the kind's zero
	// (the environment variable's value when Env names one).
	Default any
	Help    string
	// In names the commands that take the option, separated by spaces;
	// empty for every command.
	In string
	// Variants give commands of In their own help, default or kind.
	Variants []Variant
	Group    Group
	// CommandLineOnly says why option files cannot set the option; empty
	// when they can, under its name.
	CommandLineOnly string
	// Env names the environment variable that gives the default, which
	// beats option files.
	Env string
	// Secret: config masks the value.
	Secret bool
	// AddsToCommandLine: a repeatable option's values from option files
	// add to those of the command line instead of giving way to them.
	AddsToCommandLine bool
	Hidden            bool
	// NoOptDefault is the value of the option given without one, for a
	// non-boolean option that may be.
	NoOptDefault string
}

// Variant is what differs for the commands In names.
type Variant struct {
	In      string
	Kind    Kind
	Default any
	Help    string
}

// perCPU is the type of NumCPU.
type perCPU int

func (perCPU) String() string { return "the number of CPUs, at least 2" }

// NumCPU is the Default of an int option that defaults to
// DefaultParallel.
const NumCPU perCPU = 0

// DefaultParallel is the number of CPUs, at least 2: two streams already
// overlap compression with I/O on a small machine.
func DefaultParallel() int { return max(2, runtime.NumCPU()) }

// PromptValue is what --password given without a value leaves: a request
// to prompt, which no password can be.
const PromptValue = "\x00prompt"

// byName indexes table.
var byName = func() map[string]*Option {
	m := map[string]*Option{}
	for i := range table {
		m[table[i].Name] = &table[i]
	}
	return m
}()

// All lists every option, by name.
func All() []Option { return slices.Clone(table) }

// Known reports whether some command takes an option of this name.
func Known(name string) bool { return byName[name] != nil }

// Takes reports whether command takes o.
func (o Option) Takes(command string) bool {
	return o.In == "" || slices.Contains(strings.Fields(o.In), command)
}

// Of is option name as command takes it, its variant applied and its
// group filled in; false when command does not take it.
func Of(command, name string) (Option, bool) {
	p := byName[name]
	if p == nil || !p.Takes(command) {
		return Option{}, false
	}
	o := *p
	for _, v := range o.Variants {
		if slices.Contains(strings.Fields(v.In), command) {
			o.Kind, o.Default, o.Help = cmp.Or(v.Kind, o.Kind), cmp.Or(v.Default, o.Default), cmp.Or(v.Help, o.Help)
		}
	}
	o.Variants = nil
	if o.Group == "" {
		o.Group = General
	}
	return o, true
}

// Flags binds the options of one command to the flags of a flag set.
type Flags struct {
	fs      *pflag.FlagSet
	command string
}

// Bind binds options to the flags of fs, a cobra command's flag set
// (Flags or PersistentFlags), which bears the command's name.
func Bind(fs *pflag.FlagSet) Flags { return Flags{fs: fs, command: fs.Name()} }

// option is name as f's command takes it; a name not in the table, a
// command that does not take it, or a kind the binding cannot hold is a
// programming error: it panics.
func (f Flags) option(name string, kinds ...Kind) Option {
	o, ok := Of(f.command, name)
	if !ok {
		panic(fmt.Sprintf("options: %s has no option %q in the table", f.command, name))
	}
	if !slices.Contains(kinds, o.Kind) {
		panic(fmt.Sprintf("options: %s --%s is a %s option, not bound as one", f.command, name, o.Kind))
	}
	return o
}

// defaultOf is o's default as a T.
func defaultOf[T any](o Option) T {
	switch d := o.Default.(type) {
	case nil:
		var zero T
		return zero
	case T:
		return d
	}
	panic(fmt.Sprintf("options: the default of --%s is a %T, not a %T", o.Name, o.Default, *new(T)))
}

// done sets what every kind of flag may have besides its value.
func (f Flags) done(o Option) {
	fl := f.fs.Lookup(o.Name)
	if o.NoOptDefault != "" {
		fl.NoOptDefVal = o.NoOptDefault
	}
	fl.Hidden = o.Hidden
}

// Bool binds a boolean option, which takes the words option files write
// booleans with (mariadb.ParseOptionBool) wherever it is given.
func (f Flags) Bool(name string, p *bool) {
	o := f.option(name, Bool)
	*p = defaultOf[bool](o)
	f.fs.VarP(boolValue{p}, name, o.Short, o.Help)
	f.fs.Lookup(name).NoOptDefVal = "true"
	f.done(o)
}

// Int binds an integer option.
func (f Flags) Int(name string, p *int) {
	o := f.option(name, Int)
	var def int
	if o.Default == NumCPU {
		def = DefaultParallel()
	} else {
		def = defaultOf[int](o)
	}
	f.fs.IntVarP(p, name, o.Short, def, o.Help)
	f.done(o)
}

// String binds a text option, or a size that a tool reads itself and is
// passed to it as given (use-memory, mariabackup's).
func (f Flags) String(name string, p *string) {
	o := f.option(name, String, Size)
	def := defaultOf[string](o)
	if o.Env != "" {
		def = os.Getenv(o.Env)
	}
	f.fs.StringVarP(p, name, o.Short, def, o.Help)
	f.done(o)
}

// Duration binds a duration option.
func (f Flags) Duration(name string, p *time.Duration) {
	o := f.option(name, Duration)
	f.fs.DurationVarP(p, name, o.Short, defaultOf[time.Duration](o), o.Help)
	f.done(o)
}

// Strings binds a repeatable option or a list.
func (f Flags) Strings(name string, p *[]string) {
	o := f.option(name, Repeatable, List)
	if o.Kind == List {
		f.fs.StringSliceVarP(p, name, o.Short, defaultOf[[]string](o), o.Help)
	} else {
		f.fs.StringArrayVarP(p, name, o.Short, defaultOf[[]string](o), o.Help)
	}
	f.done(o)
}
