package metrics

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"
)

// statusPage is the status page: plain HTML, no scripts.
var statusPage = template.Must(template.New("status").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>MiniKafka node {{.NodeID}}</title>
<style>
body{font-family:sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin-bottom:1.5em}
th,td{border:1px solid #bbb;padding:.25em .6em;text-align:left}
th{background:#eee}
td.num{text-align:right}
.bad{color:#b00;font-weight:bold}
</style></head><body>
<h1>MiniKafka node {{.NodeID}}</h1>
<p>Cluster <code>{{.ClusterID}}</code>, controller {{if ge .ControllerID 0}}node {{.ControllerID}}{{else}}<span class="bad">unknown</span>{{end}}.
Readiness: {{if .Ready}}ready{{else}}<span class="bad">{{.NotReady}}</span>{{end}}.</p>
{{with .Disk}}<p id="disk">Data disk: {{.Free}} free of {{.Total}}; reserve {{.Reserve}}, low below {{.AlertAt}}.
{{if .State}}<span class="bad">{{.State}}</span>{{else}}Enough free space.{{end}}</p>
{{end}}
<h2>Brokers</h2>
<table id="brokers"><tr><th>Id</th><th>Kafka address</th><th>Role</th><th>State</th></tr>
{{range .Brokers}}<tr><td>{{.ID}}</td><td>{{.Addr}}</td><td>{{.Role}}</td>{{if .Down}}<td class="bad">{{.Down}}</td>{{else}}<td>up</td>{{end}}</tr>
{{end}}</table>
<p id="health">Partitions: {{.Total}}, under-replicated {{if .URP}}<span class="bad">{{.URP}}</span>{{else}}0{{end}}, offline (no leader) {{if .Offline}}<span class="bad">{{.Offline}}</span>{{else}}0{{end}}.</p>
<h2>Partitions</h2>
<table id="partitions"><tr><th>Topic</th><th>Partition</th><th>Leader</th><th>Replicas</th><th>In sync</th><th>High watermark</th><th>Log size</th><th>Follower lag (Raft entries)</th></tr>
{{range .Partitions}}<tr><td>{{.Topic}}</td><td class="num">{{.Partition}}</td><td>{{.Leader}}</td><td>{{.Replicas}}</td><td{{if .UnderReplicated}} class="bad"{{end}}>{{.ISR}}</td><td class="num">{{.End}}</td><td class="num">{{.Size}}</td><td>{{.Lag}}</td></tr>
{{else}}<tr><td colspan="8">no topics</td></tr>
{{end}}</table>
<p>High watermark, log size and lag are shown where this node holds a replica; lag where it leads. Internal topics ({{.Internal}} partitions) are not listed.</p>
<h2>Consumer groups coordinated here</h2>
<table id="groups"><tr><th>Group</th><th>Topic</th><th>Partition</th><th>Committed offset</th><th>Lag (records)</th></tr>
{{range .Groups}}<tr><td>{{.Group}}</td><td>{{.Topic}}</td><td class="num">{{.Partition}}</td><td class="num">{{.Committed}}</td><td class="num">{{.Lag}}</td></tr>
{{else}}<tr><td colspan="5">none</td></tr>
{{end}}</table>
<h2>Partition reassignments in progress</h2>
<table id="reassignments"><tr><th>Topic</th><th>Partition</th><th>Replicas</th><th>Adding</th><th>Removing</th></tr>
{{range .Moves}}<tr><td>{{.Topic}}</td><td class="num">{{.Partition}}</td><td>{{.Replicas}}</td><td>{{.Adding}}</td><td>{{.Removing}}</td></tr>
{{else}}<tr><td colspan="5">none</td></tr>
{{end}}</table>
<p><a href="/metrics">/metrics</a> · <a href="/readyz">/readyz</a> · <a href="/livez">/livez</a></p>
</body></html>
`))

type statusData struct {
	NodeID, ControllerID int32
	ClusterID            string
	Ready                bool
	NotReady             string
	Brokers              []statusBroker
	Partitions           []statusPartition
	Internal             int
	// Total, URP and Offline count every partition, internal ones too.
	Total, URP, Offline int
	Groups              []statusGroup
	Moves               []statusMove
	Disk                *statusDisk // nil when unknown
}

// statusDisk is the data disk's line, sizes in MiB.
type statusDisk struct {
	Free, Total, Reserve, AlertAt string
	State                         string // "" when there is room
}

func diskLine(d Disk) *statusDisk {
	if d.Total <= 0 {
		return nil
	}
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	sd := &statusDisk{Free: mib(d.Free), Total: mib(d.Total), Reserve: mib(d.Reserve), AlertAt: mib(d.AlertAt)}
	switch {
	case d.LogStoreErr != nil:
		sd.State = "The Raft log store failed: produce is refused (" + d.LogStoreErr.Error() + ")."
	case d.Refusing:
		sd.State = "Below the reserve: produce and new partitions are refused until space is freed (DeleteRecords, DeleteTopics, retention)."
	case d.Low:
		sd.State = "Low on space."
	}
	return sd
}

type statusMove struct {
	Topic                      string
	Partition                  int32
	Replicas, Adding, Removing string
}

type statusBroker struct {
	ID         int32
	Addr, Role string
	Down       string // "" while up
}

type statusPartition struct {
	Topic                 string
	Partition             int32
	Leader, Replicas, ISR string
	End, Size, Lag        string
	UnderReplicated       bool
}

type statusGroup struct {
	Group, Topic string
	Partition    int32
	Committed    int64
	Lag          string
}

// serveStatus renders the status page from src.
func serveStatus(w http.ResponseWriter, src Source) {
	s := src.State()
	d := statusData{NodeID: s.NodeID, ClusterID: s.ClusterID, ControllerID: s.ControllerID, Ready: true,
		Disk: diskLine(s.Disk)}
	if err := src.Ready(); err != nil {
		d.Ready, d.NotReady = false, "not ready: "+err.Error()
	}
	d.Brokers = statusBrokers(s, time.Now())
	local := map[string]Replica{}
	for _, r := range s.Replicas {
		local[r.Topic+"\x00"+itoa(r.Partition)] = r
	}
	for _, t := range s.Topics {
		for _, p := range t.Partitions {
			d.Total++
			d.URP += b2i(len(p.ISR) < len(p.Replicas))
			d.Offline += b2i(p.Leader < 0)
		}
		if t.Internal {
			d.Internal += len(t.Partitions)
			continue
		}
		for _, p := range t.Partitions {
			sp := statusPartition{Topic: t.Name, Partition: p.Partition, Leader: "none",
				Replicas: ids(p.Replicas), ISR: ids(p.ISR), End: "–", Size: "–", Lag: "–",
				UnderReplicated: len(p.ISR) < len(p.Replicas)}
			if p.Leader >= 0 {
				sp.Leader = itoa(p.Leader)
			}
			if r, ok := local[t.Name+"\x00"+itoa(p.Partition)]; ok {
				sp.End, sp.Size = fmt.Sprint(r.LogEnd), fmt.Sprint(r.LogSize)
				if r.Replication.Leader {
					sp.Lag = followerLag(r)
				}
			}
			d.Partitions = append(d.Partitions, sp)
		}
	}
	for _, g := range s.Groups {
		sg := statusGroup{Group: g.Group, Topic: g.Topic, Partition: g.Partition, Committed: g.Committed, Lag: "–"}
		if g.End >= 0 {
			sg.Lag = fmt.Sprint(max(g.End-g.Committed, 0))
		}
		d.Groups = append(d.Groups, sg)
	}
	for _, m := range s.Moves {
		d.Moves = append(d.Moves, statusMove{Topic: m.Topic, Partition: m.Partition,
			Replicas: ids(m.Replicas), Adding: ids(m.Adding), Removing: ids(m.Removing)})
	}
	var buf bytes.Buffer
	if err := statusPage.Execute(&buf, d); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// statusBrokers are the brokers' rows: role, and since when a down one is.
func statusBrokers(s State, now time.Time) []statusBroker {
	var out []statusBroker
	for _, b := range s.Brokers {
		role := "broker"
		if b.ID == s.ControllerID {
			role = "broker, controller"
		}
		if b.ID == s.NodeID {
			role += " (this node)"
		}
		sb := statusBroker{ID: b.ID, Addr: b.Addr, Role: role}
		if !b.Up {
			sb.Addr = "–"
			sb.Down = "down since " + b.DownSince.UTC().Format(time.RFC3339) +
				" (" + now.Sub(b.DownSince).Round(time.Second).String() + ")"
		}
		out = append(out, sb)
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func ids(s []int32) string {
	out := make([]string, len(s))
	for i, id := range s {
		out[i] = itoa(id)
	}
	return strings.Join(out, ", ")
}

// followerLag lists each follower's lag behind the commit index.
func followerLag(r Replica) string {
	rep := r.Replication
	if len(rep.Followers) == 0 {
		return "–"
	}
	parts := make([]string, 0, len(rep.Followers))
	for _, f := range rep.Followers {
		lag := uint64(0)
		if rep.CommitIndex > f.Match {
			lag = rep.CommitIndex - f.Match
		}
		parts = append(parts, fmt.Sprintf("node %d: %d", f.Node, lag))
	}
	return strings.Join(parts, "; ")
}
