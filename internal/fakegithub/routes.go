package fakegithub

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var closesRef = regexp.MustCompile(`(?i)\b(?:closes|fixes|resolves)\s+#(\d+)`)

// route answers one authorised request. s.mu is held.
func (s *Server) route(req *http.Request, scopes []string) response {
	if req.URL.Path == "/api/graphql" {
		return s.graphql(req, scopes)
	}
	path, found := strings.CutPrefix(req.URL.Path, "/api/v3/")
	if !found {
		return errorResp(404, "Not Found")
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) == 1 && parts[0] == "user" {
		return okResp(map[string]any{"login": "ralph-bot"})
	}
	if len(parts) < 3 || parts[0] != "repos" {
		return errorResp(404, "Not Found")
	}
	r := s.repos[parts[1]+"/"+parts[2]]
	if r == nil {
		return errorResp(404, "Not Found")
	}
	if req.Method != http.MethodGet && !slices.Contains(scopes, "repo") && !slices.Contains(scopes, "public_repo") {
		return response{status: 403, body: map[string]string{"message": "Resource not accessible by personal access token"},
			header: http.Header{"X-Accepted-Oauth-Scopes": {"repo"}}}
	}
	rest := parts[3:]
	m := req.Method
	switch {
	case len(rest) == 0 && m == "GET":
		return okResp(map[string]any{"full_name": r.Owner + "/" + r.Name, "default_branch": r.DefaultBranch,
			"permissions": map[string]bool{"pull": true, "push": true}})
	case len(rest) == 1 && rest[0] == "issues" && m == "GET":
		return s.listIssues(req, r)
	case len(rest) == 2 && rest[0] == "issues" && m == "GET":
		is := r.issue(rest[1])
		if is == nil {
			return errorResp(404, "Not Found")
		}
		return okResp(s.issueJSON(r, is))
	case len(rest) == 3 && rest[0] == "issues" && rest[2] == "comments":
		is := r.issue(rest[1])
		if is == nil {
			return errorResp(404, "Not Found")
		}
		if m == "POST" {
			var in struct{ Body string }
			if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
				return errorResp(400, "Problems parsing JSON")
			}
			s.nextID++
			c := &Comment{ID: s.nextID, Issue: is.Number, Body: in.Body, User: "ralph-bot"}
			r.Comments = append(r.Comments, c)
			return response{status: 201, body: commentJSON(c)}
		}
		var out []any
		for _, c := range r.Comments {
			if c.Issue == is.Number {
				out = append(out, commentJSON(c))
			}
		}
		return page(req, out)
	case len(rest) == 3 && rest[0] == "issues" && rest[1] == "comments" && m == "PATCH":
		id, _ := strconv.ParseInt(rest[2], 10, 64)
		for _, c := range r.Comments {
			if c.ID == id {
				var in struct{ Body string }
				if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
					return errorResp(400, "Problems parsing JSON")
				}
				c.Body = in.Body
				return okResp(commentJSON(c))
			}
		}
		return errorResp(404, "Not Found")
	case len(rest) == 3 && rest[0] == "issues" && rest[2] == "labels" && m == "POST":
		is := r.issue(rest[1])
		if is == nil {
			return errorResp(404, "Not Found")
		}
		var in []string
		if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
			return errorResp(400, "Problems parsing JSON")
		}
		for _, l := range in {
			if !slices.Contains(is.Labels, l) {
				is.Labels = append(is.Labels, l)
			}
		}
		return okResp(labelsJSON(is.Labels))
	case len(rest) == 4 && rest[0] == "issues" && rest[2] == "labels" && m == "DELETE":
		is := r.issue(rest[1])
		if is == nil || !slices.Contains(is.Labels, rest[3]) {
			return errorResp(404, "Label does not exist")
		}
		is.Labels = slices.DeleteFunc(is.Labels, func(l string) bool { return l == rest[3] })
		return okResp(labelsJSON(is.Labels))
	case len(rest) == 1 && rest[0] == "milestones" && m == "GET":
		var out []any
		for _, ms := range r.Milestones {
			out = append(out, ms)
		}
		return page(req, out)
	case len(rest) == 1 && rest[0] == "pulls":
		if m == "POST" {
			return s.createPull(req, r)
		}
		var out []any
		head := req.URL.Query().Get("head")
		state := req.URL.Query().Get("state")
		for _, p := range r.Pulls {
			if (head == "" || head == r.Owner+":"+p.Head) && (state == "" || state == "all" || state == p.State) {
				out = append(out, s.pullJSON(r, p))
			}
		}
		return page(req, out)
	case len(rest) == 2 && rest[0] == "pulls":
		p := r.pull(rest[1])
		if p == nil {
			return errorResp(404, "Not Found")
		}
		if m == "PATCH" {
			var in struct {
				Title, Body *string
			}
			if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
				return errorResp(400, "Problems parsing JSON")
			}
			if in.Title != nil {
				p.Title = *in.Title
			}
			if in.Body != nil {
				p.Body = *in.Body
			}
		}
		return okResp(s.pullJSON(r, p))
	case len(rest) == 3 && rest[0] == "pulls" && rest[2] == "comments":
		p := r.pull(rest[1])
		if p == nil {
			return errorResp(404, "Not Found")
		}
		if m == "POST" {
			var in struct {
				Body      string `json:"body"`
				InReplyTo int64  `json:"in_reply_to"`
			}
			if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
				return errorResp(400, "Problems parsing JSON")
			}
			s.nextID++
			c := &ReviewComment{ID: s.nextID, Pull: p.Number, InReplyTo: in.InReplyTo, User: "ralph-bot", Body: in.Body}
			for _, o := range r.Review {
				if o.ID == in.InReplyTo {
					c.Path, c.Line = o.Path, o.Line
				}
			}
			r.Review = append(r.Review, c)
			return response{status: 201, body: reviewJSON(c)}
		}
		var out []any
		for _, c := range r.Review {
			if c.Pull == p.Number {
				out = append(out, reviewJSON(c))
			}
		}
		return page(req, out)
	case len(rest) == 3 && rest[0] == "commits" && rest[2] == "check-runs" && m == "GET":
		runs, ok := r.Checks[rest[1]]
		if !ok && s.defaultChecks != nil {
			runs = s.defaultChecks(rest[1])
			for i := range runs {
				s.nextID++
				runs[i].ID = s.nextID
				r.Logs[runs[i].ID] = runs[i].Log
			}
			r.Checks[rest[1]] = runs
		}
		var out []any
		for i, c := range runs {
			status := c.Status
			if c.PendingReads > 0 {
				runs[i].PendingReads--
				status = "in_progress"
			}
			run := map[string]any{"id": c.ID, "name": c.Name, "status": status, "head_sha": rest[1],
				"output": map[string]any{"title": c.Name, "summary": c.Summary}}
			if status == "completed" {
				run["conclusion"] = c.Conclusion
			}
			out = append(out, run)
		}
		return response{status: 200, body: map[string]any{"total_count": len(out), "check_runs": orEmpty(out)}}
	case len(rest) == 4 && rest[0] == "actions" && rest[1] == "jobs" && rest[3] == "logs" && m == "GET":
		id, _ := strconv.ParseInt(rest[2], 10, 64)
		if _, ok := r.Logs[id]; !ok {
			return errorResp(404, "Not Found")
		}
		return response{status: http.StatusFound, header: http.Header{"Location": {fmt.Sprintf("%s/logs/%d", "http://"+req.Host, id)}}}
	}
	return errorResp(404, "Not Found")
}

func orEmpty(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}

// page answers one page of a list, with GitHub's Link header.
func page(req *http.Request, all []any) response {
	q := req.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	n, _ := strconv.Atoi(q.Get("page"))
	n = max(n, 1)
	lo := min((n-1)*per, len(all))
	hi := min(lo+per, len(all))
	resp := response{status: 200, body: orEmpty(all[lo:hi])}
	if hi < len(all) {
		u := *req.URL
		q.Set("page", strconv.Itoa(n+1))
		u.RawQuery = q.Encode()
		resp.header = http.Header{"Link": {fmt.Sprintf(`<http://%s%s>; rel="next"`, req.Host, u.RequestURI())}}
	}
	return resp
}

func (s *Server) listIssues(req *http.Request, r *Repo) response {
	q := req.URL.Query()
	var out []any
	for _, is := range r.Issues {
		if st := q.Get("state"); st != "all" && is.State != cmp.Or(st, "open") {
			continue
		}
		if ls := q.Get("labels"); ls != "" {
			want := strings.Split(ls, ",")
			if slices.ContainsFunc(want, func(l string) bool { return !slices.Contains(is.Labels, l) }) {
				continue
			}
		}
		if ms := q.Get("milestone"); ms != "" && ms != "*" && ms != strconv.Itoa(is.Milestone) {
			continue
		}
		if a := q.Get("assignee"); a != "" && a != "*" && a != is.Assignee {
			continue
		}
		out = append(out, s.issueJSON(r, is))
	}
	// Pull requests are issues too, as on GitHub.
	for _, p := range r.Pulls {
		if p.State == cmp.Or(q.Get("state"), "open") && q.Get("labels") == "" {
			out = append(out, map[string]any{"number": p.Number, "title": p.Title, "state": p.State,
				"pull_request": map[string]any{"url": "x"}})
		}
	}
	return page(req, out)
}

func (s *Server) issueJSON(r *Repo, is *Issue) map[string]any {
	return map[string]any{"number": is.Number, "title": is.Title, "body": is.Body, "state": is.State,
		"labels":   labelsJSON(is.Labels),
		"html_url": fmt.Sprintf("https://github.example/%s/%s/issues/%d", r.Owner, r.Name, is.Number)}
}

func labelsJSON(ls []string) []any {
	out := []any{}
	for _, l := range ls {
		out = append(out, map[string]string{"name": l})
	}
	return out
}

func commentJSON(c *Comment) map[string]any {
	return map[string]any{"id": c.ID, "body": c.Body, "user": map[string]string{"login": c.User}}
}

func reviewJSON(c *ReviewComment) map[string]any {
	m := map[string]any{"id": c.ID, "body": c.Body, "path": c.Path, "line": c.Line,
		"user": map[string]string{"login": c.User}}
	if c.InReplyTo != 0 {
		m["in_reply_to_id"] = c.InReplyTo
	}
	return m
}

func (r *Repo) issue(num string) *Issue {
	n, _ := strconv.Atoi(num)
	for _, is := range r.Issues {
		if is.Number == n {
			return is
		}
	}
	return nil
}

func (r *Repo) pull(num string) *Pull {
	n, _ := strconv.Atoi(num)
	for _, p := range r.Pulls {
		if p.Number == n {
			return p
		}
	}
	return nil
}

func (s *Server) createPull(req *http.Request, r *Repo) response {
	var in struct {
		Title, Head, Base, Body string
		Draft                   bool
	}
	if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
		return errorResp(400, "Problems parsing JSON")
	}
	for _, p := range r.Pulls {
		if p.Head == in.Head && p.State == "open" {
			return response{status: 422, body: map[string]any{"message": "Validation Failed",
				"errors": []map[string]string{{"resource": "PullRequest", "code": "custom",
					"message": "A pull request already exists for " + r.Owner + ":" + in.Head + "."}}}}
		}
	}
	if s.headSHA != nil && s.headSHA(in.Head) == "" {
		return response{status: 422, body: map[string]any{"message": "Validation Failed",
			"errors": []map[string]string{{"resource": "PullRequest", "field": "head", "code": "invalid"}}}}
	}
	p := &Pull{Number: s.number(r), Title: in.Title, Head: in.Head, Base: in.Base, Body: in.Body, Draft: in.Draft, State: "open"}
	p.NodeID = fmt.Sprintf("PR_%d", p.Number)
	r.Pulls = append(r.Pulls, p)
	return response{status: 201, body: s.pullJSON(r, p)}
}

func (s *Server) pullJSON(r *Repo, p *Pull) map[string]any {
	sha := ""
	if s.headSHA != nil {
		sha = s.headSHA(p.Head)
	}
	return map[string]any{"number": p.Number, "node_id": p.NodeID, "title": p.Title, "body": p.Body,
		"state": p.State, "draft": p.Draft,
		"html_url": fmt.Sprintf("https://github.example/%s/%s/pull/%d", r.Owner, r.Name, p.Number),
		"head":     map[string]any{"ref": p.Head, "sha": sha},
		"base":     map[string]any{"ref": p.Base}}
}

// ClosesIssues lists the issues pull request p's body closes (Closes #N).
func (p *Pull) ClosesIssues() []int {
	var out []int
	for _, m := range closesRef.FindAllStringSubmatch(p.Body, -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	return out
}

// graphql answers the two mutations that change a pull request's draft
// state.
func (s *Server) graphql(req *http.Request, scopes []string) response {
	if !slices.Contains(scopes, "repo") {
		return errorResp(403, "Resource not accessible by personal access token")
	}
	var in struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
		return errorResp(400, "Problems parsing JSON")
	}
	id, _ := in.Variables["id"].(string)
	for _, r := range s.repos {
		for _, p := range r.Pulls {
			if p.NodeID != id {
				continue
			}
			switch {
			case strings.Contains(in.Query, "markPullRequestReadyForReview"):
				p.Draft = false
			case strings.Contains(in.Query, "convertPullRequestToDraft"):
				p.Draft = true
			default:
				return okResp(map[string]any{"errors": []map[string]string{{"message": "unknown mutation"}}})
			}
			return okResp(map[string]any{"data": map[string]any{}})
		}
	}
	return okResp(map[string]any{"errors": []map[string]string{{"message": "Could not resolve to a node with the global id of '" + id + "'"}}})
}
