package e2e

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// agentCLI is one real agent CLI: how ralph names it, its executable, and
// how a run points it at the fake model server.
type agentCLI struct {
	name string // ralph --agent NAME
	bin  string // the executable in node_modules/.bin
	// setup writes the CLI's own settings into the run's HOME, adds its
	// variables to the environment and its lines to ralph.toml (top-level
	// keys first, then tables).
	setup func(p *project)
}

// agentCLIs lists the CLIs under test. Every one of them keeps to
// 127.0.0.1: besides the base URL, each gets the switches that stop its
// update checks, telemetry and plugin downloads (found by tracing their
// connect calls).
func agentCLIs() []agentCLI {
	return []agentCLI{
		{name: "claude", bin: "claude", setup: func(p *project) {
			p.setenv(
				"ANTHROPIC_BASE_URL="+p.server.URL,
				"ANTHROPIC_API_KEY="+apiKey,
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
				"DISABLE_AUTOUPDATER=1",
				"DISABLE_TELEMETRY=1",
				"DISABLE_ERROR_REPORTING=1",
				// One retry, not ten: a 429 ends the run in seconds.
				"CLAUDE_CODE_MAX_RETRIES=1",
			)
		}},
		{name: "codex", bin: "codex", setup: func(p *project) {
			p.setenv("FAKE_MODEL_API_KEY=" + apiKey)
			// No update check, analytics, feedback upload, or plugin sync
			// (which goes to github.com and chatgpt.com).
			p.writeHome(".codex/config.toml", strings.Join([]string{
				"check_for_update_on_startup = false",
				"[analytics]", "enabled = false",
				"[feedback]", "enabled = false",
				"[features]", "plugins = false", "remote_plugin = false", "apps = false", "",
			}, "\n"))
			// The provider goes through ralph's extra-args: what a user
			// would write to use Codex with their own endpoint.
			provider := fmt.Sprintf(`model_providers.fake={name="fake", base_url="%s/v1", wire_api="responses", `+
				`env_key="FAKE_MODEL_API_KEY", request_max_retries=0, stream_max_retries=0}`, p.server.URL)
			fmt.Fprintf(&p.toml, "model = \"fake-model\"\n[agents.codex]\nextra-args = [\"-c\", %s, \"-c\", \"model_provider=fake\"]\n",
				strconv.Quote(provider))
		}},
		{name: "gemini", bin: "gemini", setup: func(p *project) {
			p.setenv("GOOGLE_GEMINI_BASE_URL="+p.server.URL, "GEMINI_API_KEY="+apiKey)
			p.writeHome(".gemini/settings.json", mustJSON(map[string]any{
				"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
				"general":   map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true, "maxAttempts": 2},
				"privacy":   map[string]any{"usageStatisticsEnabled": false},
				"telemetry": map[string]any{"enabled": false},
			}))
		}},
		{name: "opencode", bin: "opencode", setup: func(p *project) {
			p.setenv(
				"OPENCODE_CONFIG_CONTENT="+mustJSON(map[string]any{
					"model":      "fake/fake-model",
					"autoupdate": false,
					"share":      "disabled",
					"provider": map[string]any{"fake": map[string]any{
						"npm":     "@ai-sdk/openai-compatible",
						"name":    "Fake model server",
						"options": map[string]any{"baseURL": p.server.URL + "/v1", "apiKey": apiKey},
						"models":  map[string]any{"fake-model": map[string]any{"name": "Fake model", "tool_call": true}},
					}},
				}),
				"OPENCODE_DISABLE_AUTOUPDATE=1",
				"OPENCODE_DISABLE_MODELS_FETCH=1",
				"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
				"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
				// OpenCode installs @opencode-ai/plugin into its config
				// directory at start: pointed at the fake server, the
				// registry lookup gets a 404 at once instead of going out.
				"npm_config_registry="+p.server.URL+"/npm/",
			)
		}},
		{name: "qwen", bin: "qwen", setup: func(p *project) {
			p.setenv("OPENAI_BASE_URL="+p.server.URL+"/v1", "OPENAI_API_KEY="+apiKey, "OPENAI_MODEL=fake-model")
			p.writeHome(".qwen/settings.json", mustJSON(map[string]any{
				"security": map[string]any{"auth": map[string]any{"selectedType": "openai"}},
				"general":  map[string]any{"disableAutoUpdate": true},
				"privacy":  map[string]any{"usageStatisticsEnabled": false},
				// Qwen waits 60 s, then longer, between ten 429 retries by
				// default.
				"model": map[string]any{"generationConfig": map[string]any{"maxRetries": 1, "retryInitialDelayMs": 500, "retryMaxDelayMs": 1000}},
			}))
		}},
		{name: "droid", bin: "droid", setup: func(p *project) {
			// Air-gapped: no Factory login, telemetry or update check.
			p.setenv("FACTORY_AIRGAP_ENABLED=true")
			p.writeHome(".factory/settings.json", mustJSON(map[string]any{
				"customModels": []any{map[string]any{
					"model": "fake-model", "displayName": "FakeChat", "baseUrl": p.server.URL + "/v1",
					"apiKey": apiKey, "provider": "generic-chat-completion-api", "maxOutputTokens": 4096,
				}},
			}))
			p.toml.WriteString("model = \"custom:FakeChat-0\"\n")
		}},
		{name: "copilot", bin: "copilot", setup: func(p *project) {
			p.setenv(
				"COPILOT_OFFLINE=true",
				"COPILOT_PROVIDER_BASE_URL="+p.server.URL+"/v1",
				"COPILOT_PROVIDER_TYPE=openai",
				"COPILOT_PROVIDER_API_KEY="+apiKey,
				"COPILOT_MODEL=fake-model",
			)
		}},
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
