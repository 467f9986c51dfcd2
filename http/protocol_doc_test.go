package http_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/batonhq/baton/domain"
	batonhttp "github.com/batonhq/baton/http"
)

// renderTable prints the transition table as docs/protocol.md holds it.
func renderTable() string {
	var b strings.Builder
	b.WriteString("| state |")
	for _, c := range domain.TableCommands {
		b.WriteString(" " + c + " |")
	}
	b.WriteString("\n|---|")
	for range domain.TableCommands {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	cells := batonhttp.TransitionTable()
	for i := 0; i < len(cells); i += len(domain.TableCommands) {
		fmt.Fprintf(&b, "| `%s` |", cells[i].State)
		for _, c := range cells[i : i+len(domain.TableCommands)] {
			if c.Code == "" {
				fmt.Fprintf(&b, " %d → `%s` |", c.Status, c.Next)
			} else {
				fmt.Fprintf(&b, " %d `%s` |", c.Status, c.Code)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestProtocolDocShowsTheTable keeps docs/protocol.md true: the table there
// is the one the API publishes, TestPublishedTableOverHTTP walks over HTTP
// and domain's TestTransitionTable walks through Decide.
func TestProtocolDocShowsTheTable(t *testing.T) {
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := renderTable(); !strings.Contains(string(doc), want) {
		t.Fatalf("docs/protocol.md does not hold the current transition table; paste this:\n%s", want)
	}
}
