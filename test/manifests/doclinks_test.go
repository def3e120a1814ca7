package manifests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/testenv"
)

// TestDocLinks: every relative link of the chart's README and of the
// install and HPA/KEDA guides names a path of the repository and, with an
// anchor, a heading of that file (as GitHub makes anchors).
func TestDocLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, doc := range []string{"charts/wva/README.md", "docs/install.md", "docs/hpa-keda.md"} {
		for _, m := range link.FindAllSubmatch(readRepoFile(t, doc), -1) {
			target := string(m[1])
			if strings.Contains(target, "://") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
			}
			if _, err := os.Stat(filepath.Join(testenv.Root(), path)); err != nil {
				t.Errorf("%s: link %s: %v", doc, target, err)
				continue
			}
			if anchor != "" && !headingAnchors(readRepoFile(t, path))[anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", doc, target, path, anchor)
			}
		}
	}
}
