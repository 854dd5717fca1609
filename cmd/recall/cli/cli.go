// Package cli implements the recall command's subcommands: each reads its
// flags and environment, wires the adapters around the evidence core, and
// runs until done or signalled.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Env is what a command may touch of its process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment; tests replace it.
	Getenv func(string) string
}

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
}

// commands is filled by the init functions of the files beside this one.
var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, env *Env, args []string) error) {
	commands[name] = command{summary: summary, run: run}
}

// errUsage asks Main to exit 2 without printing more.
var errUsage = errors.New("usage")

// Main runs the subcommand named by args[0] and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return mainEnv(&Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv}, args)
}

func mainEnv(env *Env, args []string) int {
	stderr := env.Stderr
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "recall: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	// The first SIGINT or SIGTERM cancels ctx: commands drain and return.
	// A second one exits at once.
	ctx, stop := signalContext(context.Background())
	defer stop()
	if err := cmd.run(ctx, env, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			// -h asked for the usage, which was printed.
			return 0
		}
		if errors.Is(err, errUsage) {
			return 2
		}
		fmt.Fprintf(stderr, "recall %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: recall <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-9s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "recall <command> -h" for a command's flags.`)
}

// signalContext returns a context cancelled by the first SIGINT or SIGTERM;
// the second one exits the process with status 1 at once.
func signalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		var first time.Time
		select {
		case <-ch:
			first = time.Now()
			cancel()
		case <-done:
			return
		}
		for {
			select {
			case sig := <-ch:
				// A signal sent to the process and to its group arrives
				// twice within microseconds: that is still the first.
				if time.Since(first) < 50*time.Millisecond {
					continue
				}
				fmt.Fprintln(os.Stderr, "recall: second signal, exiting at once")
				code := 1
				if s, ok := sig.(syscall.Signal); ok {
					code = 128 + int(s)
				}
				os.Exit(code)
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

// newFlags returns the flag set of the command name. Its usage (-h, or a
// bad flag) is the synopsis, the command's one-line description and only
// its own flags.
func newFlags(env *Env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("recall "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: recall %s [flags]", name)
		if synopsis != "" {
			fmt.Fprint(w, " "+synopsis)
		}
		fmt.Fprintf(w, "\n\n%s.\n", upperFirst(commands[name].summary))
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(w, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// parseArgs parses args with fs, taking flags before, between and after
// positional arguments ("recall state USER CONV --format table"); "--"
// ends the flags. It returns the positional arguments.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := refuseSecretArgs(fs, args); err != nil {
		return nil, err
	}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			// The flag package printed the problem and the usage.
			return nil, errUsage
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// parseFlags parses the args of a command that takes flags only, and
// fails when there is an argument besides them.
func parseFlags(fs *flag.FlagSet, args []string) error {
	positional, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(positional) > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), positional[0])
		fs.Usage()
		return errUsage
	}
	return nil
}
