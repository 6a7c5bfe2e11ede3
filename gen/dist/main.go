// Command dist builds and checks the release artifacts (make dist): the provider plugin
// archives Pulumi downloads, their checksums and Maven's checksum sidecars, and a check that
// every artifact (plugin archives, npm tarball, wheel, sdist, jars, POM, Go SDK module,
// schema) carries the version in ./VERSION. The SDK packages themselves are built by npm,
// pip and Maven from the Makefile.
package main

import (
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	root := fs.String("root", ".", "the repository checkout")
	dir := fs.String("dir", "dist", "the release folder")
	which := fs.String("platforms", "all", "plugin archives to build or check: all, or host (this machine's only)")
	release := fs.Bool("release", false, "check: also what only a release needs (every platform, a CHANGELOG section)")
	_ = fs.Parse(os.Args[2:])
	version, err := readVersion(*root)
	if err != nil {
		fatal(err)
	}
	want := platforms
	switch *which {
	case "all":
	case "host":
		want = []Platform{hostPlatform()}
	default:
		fatal(fmt.Errorf("-platforms %q: use all or host", *which))
	}
	switch os.Args[1] {
	case "plugins":
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			fatal(err)
		}
		for _, p := range want {
			fmt.Printf("dist: %s\n", archiveName(version, p))
			if err := buildPlugin(*root, *dir, version, p); err != nil {
				fatal(err)
			}
		}
	case "maven-sums":
		for _, f := range mavenFiles(version) {
			if err := writeSidecars(filepath.Join(*dir, f)); err != nil {
				fatal(err)
			}
		}
	case "checksums":
		if err := writeChecksums(*dir, version); err != nil {
			fatal(err)
		}
	case "check":
		if problems := check(*root, *dir, version, want, *release); len(problems) > 0 {
			fmt.Fprintf(os.Stderr, "dist check: %d artifacts disagree with VERSION %s:\n  %s\n", len(problems), version, strings.Join(problems, "\n  "))
			os.Exit(1)
		}
		fmt.Printf("dist check: every artifact in %s is version %s (plugin archives checked: %d)\n", *dir, version, len(want))
	default:
		usage()
	}
}

func readVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// writeSidecars writes the .md5 and .sha1 files Maven Central wants beside each file of a bundle.
func writeSidecars(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	m, s := md5.Sum(b), sha1.Sum(b)
	if err := os.WriteFile(path+".md5", []byte(hex.EncodeToString(m[:])), 0o644); err != nil {
		return err
	}
	return os.WriteFile(path+".sha1", []byte(hex.EncodeToString(s[:])), 0o644)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: dist plugins|maven-sums|checksums|check [-root .] [-dir dist] [-platforms all|host] [-release]")
	os.Exit(2)
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "dist: %v\n", err)
	os.Exit(1)
}
