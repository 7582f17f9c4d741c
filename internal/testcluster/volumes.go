package testcluster

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const dataDirName = "..data"

// writeAtomically publishes files into dir the way kubelet's AtomicWriter
// does for Secret volumes: the payload goes into a fresh timestamped folder,
// the ..data symlink is swapped to it with one rename, and each top-level
// name is a symlink through ..data. A reader sees the old set of files or
// the new one, never a mix. It reports whether anything changed.
func writeAtomically(dir string, files map[string][]byte) (bool, error) {
	if same, err := payloadUnchanged(dir, files); err == nil && same {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, fmt.Errorf("creating payload folder: %w", err)
	}
	for rel, content := range files {
		path := filepath.Join(tsDir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return false, err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return false, err
		}
	}
	oldTarget, _ := os.Readlink(filepath.Join(dir, dataDirName))

	tmpLink := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		return false, fmt.Errorf("creating ..data_tmp link: %w", err)
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirName)); err != nil {
		return false, fmt.Errorf("swapping ..data link: %w", err)
	}

	wanted := map[string]bool{}
	for rel := range files {
		top := strings.Split(rel, string(filepath.Separator))[0]
		wanted[top] = true
		link := filepath.Join(dir, top)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join(dataDirName, top), link); err != nil {
				return false, err
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "..") && !wanted[e.Name()] {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	if oldTarget != "" {
		_ = os.RemoveAll(filepath.Join(dir, oldTarget))
	}
	return true, nil
}

// payloadUnchanged reports whether dir already publishes exactly files:
// kubelet swaps only when the content differs.
func payloadUnchanged(dir string, files map[string][]byte) (bool, error) {
	target, err := os.Readlink(filepath.Join(dir, dataDirName))
	if err != nil {
		return false, err
	}
	count := 0
	err = filepath.WalkDir(filepath.Join(dir, target), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		count++
		return nil
	})
	if err != nil || count != len(files) {
		return false, err
	}
	for rel, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, target, rel))
		if err != nil || !bytes.Equal(got, want) {
			return false, err
		}
	}
	return true, nil
}
