package mariadb

import (
	"fmt"
	"strings"
)

// ServerOptionGroups are the option groups mariadbd reads. The groups
// with a version suffix ([mysqld-10.11], [mariadb-10.11], ...) are left
// out: which of them a server reads depends on its version.
var ServerOptionGroups = []string{"mysqld", "server", "mariadb", "mariadbd", "client-server", "galera"}

// ServerSource is where a server takes its options from: option files
// (chosen as mariadbd chooses them) and its command line, which comes
// after them.
type ServerSource struct {
	NoDefaults        bool     // --no-defaults: no option file
	DefaultsFile      string   // --defaults-file: this file only (it must exist)
	DefaultsExtraFile string   // --defaults-extra-file: read after the global files (it must exist)
	Args              []string // options on the command line ("--key=value", "--key"); other words are ignored
	ArgsFrom          string   // what the command line is, for Setting.From ("the start command")
}

// Setting is the value of one server option and where it was set.
type Setting struct {
	Value string
	From  string // "file:line" or the ServerSource's ArgsFrom; "" when not set
}

// Set reports whether the option was set.
func (s Setting) Set() bool { return s.From != "" }

// ServerFiles are the server's options that place files of a datadir's
// state (the redo log, the undo tablespaces, the system tablespace, the
// binary logs) where the server looks for them, which may be outside its
// datadir. An option not set (or, for log_bin, turned off by skip-log-bin)
// is the zero Setting.
type ServerFiles struct {
	LogGroupHomeDir Setting // innodb_log_group_home_dir
	UndoDirectory   Setting // innodb_undo_directory
	DataHomeDir     Setting // innodb_data_home_dir
	DataFilePath    Setting // innodb_data_file_path
	LogBin          Setting // log_bin: the binary logs' base name ("" for log_bin without one: in the datadir)
	LogBinIndex     Setting // log_bin_index
	AriaLogDirPath  Setting // aria_log_dir_path: Aria's log files and aria_log_control
	RelayLog        Setting // relay_log: the relay logs' base name
	RelayLogIndex   Setting // relay_log_index
}

// ReadServerFiles reads the ServerFiles options of a server started from
// src: the global option files (GlobalOptionFiles, missing ones skipped),
// then DefaultsExtraFile, or DefaultsFile alone, or none; then Args. The
// last value of an option wins; "loose-" prefixes are dropped, "skip-" and
// "disable-" turn log_bin off.
func ReadServerFiles(src ServerSource) (ServerFiles, error) {
	return readServerFiles(src, GlobalOptionFiles)
}

func readServerFiles(src ServerSource, globals []string) (ServerFiles, error) {
	var files []OptionSource
	switch {
	case src.NoDefaults:
	case src.DefaultsFile != "":
		files = []OptionSource{{Path: src.DefaultsFile, Required: true}}
	default:
		for _, g := range globals {
			files = append(files, OptionSource{Path: g})
		}
		if src.DefaultsExtraFile != "" {
			files = append(files, OptionSource{Path: src.DefaultsExtraFile, Required: true})
		}
	}
	opts, err := ReadOptionFiles(files, ServerOptionGroups...)
	if err != nil {
		return ServerFiles{}, err
	}
	for _, a := range src.Args {
		rest, ok := strings.CutPrefix(a, "--")
		if !ok || rest == "" {
			continue
		}
		key, value, hasValue := strings.Cut(rest, "=")
		opts = append(opts, Option{Key: strings.ReplaceAll(key, "_", "-"), Value: value, Bare: !hasValue, File: src.ArgsFrom})
	}
	var f ServerFiles
	for _, o := range opts {
		key := strings.TrimPrefix(o.Key, "loose-")
		from := o.File
		if o.Line > 0 {
			from = fmt.Sprintf("%s:%d", o.File, o.Line)
		}
		s := Setting{Value: o.Value, From: from}
		switch key {
		case "innodb-log-group-home-dir":
			f.LogGroupHomeDir = s
		case "innodb-undo-directory":
			f.UndoDirectory = s
		case "innodb-data-home-dir":
			f.DataHomeDir = s
		case "innodb-data-file-path":
			f.DataFilePath = s
		case "log-bin":
			f.LogBin = s
		case "skip-log-bin", "disable-log-bin":
			f.LogBin = Setting{}
		case "log-bin-index":
			f.LogBinIndex = s
		case "aria-log-dir-path":
			f.AriaLogDirPath = s
		case "relay-log":
			f.RelayLog = s
		case "relay-log-index":
			f.RelayLogIndex = s
		}
	}
	return f, nil
}

// DataFileNames are the file names of innodb_data_file_path
// ("ibdata1:12M:autoextend;ibdata2:50M" names ibdata1 and ibdata2);
// ibdata1 when it is not set.
func (f ServerFiles) DataFileNames() []string {
	if !f.DataFilePath.Set() {
		return []string{"ibdata1"}
	}
	var names []string
	for _, spec := range strings.Split(f.DataFilePath.Value, ";") {
		if name, _, _ := strings.Cut(strings.TrimSpace(spec), ":"); name != "" {
			names = append(names, name)
		}
	}
	return names
}
