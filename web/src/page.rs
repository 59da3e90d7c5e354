//! The page around the app: its URL parameters, its title (which scripts wait on), the status
//! line shown over the canvas before the app starts or when it fails, and fetching and picking
//! files.

use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

/// What the page's URL asks for.
#[derive(Clone, Debug, Default)]
pub struct Query {
    /// `?model=NAME`: a model file served beside the page (any format the library reads).
    pub model: Option<String>,
    /// `?portable=1`: force the portable kernel path (no subgroups).
    pub portable: bool,
    /// `?size=WxH`: draw exactly this many pixels, 1:1, instead of filling the view.
    pub size: Option<(u32, u32)>,
    /// `?bare=1`: only the scene, at the canvas's top-left corner, without panels.
    pub bare: bool,
    /// `?continuous=1`: redraw every frame (to read frame times), not only on changes.
    pub continuous: bool,
    /// `?check=shaders`: compile every kernel variant instead of showing a model.
    pub check_shaders: bool,
    /// `?train=N`: train the built-in scene for N iterations as the page opens.
    pub train: Option<u64>,
    /// `?resolution=PX`: the built-in scene's image side for training (default 128).
    pub resolution: u32,
    /// `?lod=URL`: a level-of-detail folder (`SCENE.lod/`) to draw, its pages fetched as the
    /// cut needs them.
    pub lod: Option<String>,
    /// `?lod-memory=BYTES`: GPU memory for its resident pages (default 256MiB).
    pub lod_memory: u64,
    /// `?splat-budget=N`: most Gaussians a frame draws (default: what one binding holds).
    pub splat_budget: Option<u64>,
    /// `?tau=PX`: the level-of-detail threshold in pixels (default 1).
    pub tau: f32,
    /// `?lod-loads=N`: most pages fetched per frame (default 4).
    pub lod_loads: usize,
}

impl Query {
    /// The parameters of the page's own URL.
    pub fn from_location() -> anyhow::Result<Query> {
        let search = window()?.location().search().map_err(js_error)?;
        Query::parse(&search)
    }

    /// The parameters of a query string (`?a=b&c=d`).
    pub fn parse(search: &str) -> anyhow::Result<Query> {
        let params = web_sys::UrlSearchParams::new_with_str(search).map_err(js_error)?;
        let flag = |name: &str| params.get(name).is_some_and(|v| v != "0" && v != "false");
        let size = params.get("size").map(|s| parse_size(&s)).transpose()?;
        Ok(Query {
            model: params.get("model").filter(|m| !m.is_empty()),
            portable: flag("portable"),
            size,
            bare: flag("bare"),
            continuous: flag("continuous"),
            check_shaders: params.get("check").as_deref() == Some("shaders"),
            train: params
                .get("train")
                .map(|n| {
                    n.parse::<u64>()
                        .ok()
                        .filter(|&n| (1..=1_000_000).contains(&n))
                        .ok_or_else(|| {
                            anyhow::anyhow!(
                                "train={n:?} is not an iteration count from 1 to 1000000"
                            )
                        })
                })
                .transpose()?,
            resolution: params
                .get("resolution")
                .map(|r| {
                    r.parse::<u32>()
                        .ok()
                        .filter(|&r| (16..=1024).contains(&r))
                        .ok_or_else(|| {
                            anyhow::anyhow!("resolution={r:?} is not a side from 16 to 1024 pixels")
                        })
                })
                .transpose()?
                .unwrap_or(128),
            lod: params.get("lod").filter(|m| !m.is_empty()),
            lod_memory: params
                .get("lod-memory")
                .map(|m| {
                    wgsplat::train::byte_size::parse_image_cache_size(&m)
                        .map_err(|e| anyhow::anyhow!("lod-memory={m:?}: {e}"))
                })
                .transpose()?
                .unwrap_or(256 << 20),
            splat_budget: number(&params, "splat-budget", "a number of Gaussians from 1")?
                .map(|n: u64| n.max(1)),
            tau: match number::<f32>(&params, "tau", "a positive number of pixels")? {
                None => 1.0,
                Some(t) if t.is_finite() && t > 0.0 => t,
                Some(t) => anyhow::bail!("tau={t} is not a positive number of pixels"),
            },
            lod_loads: number(&params, "lod-loads", "a number of pages from 1")?
                .map_or(wgsplat_viewer::lod::LOADS_PER_FRAME, |n: usize| n.max(1)),
        })
    }
}

/// The number in parameter `name`, if given; `what` says what it should be when it does not parse.
fn number<T: std::str::FromStr>(
    params: &web_sys::UrlSearchParams,
    name: &str,
    what: &str,
) -> anyhow::Result<Option<T>> {
    params
        .get(name)
        .map(|v| {
            v.trim()
                .parse::<T>()
                .map_err(|_| anyhow::anyhow!("{name}={v:?} is not {what}"))
        })
        .transpose()
}

/// `WxH`, each side 8 to 4096 pixels.
pub fn parse_size(text: &str) -> anyhow::Result<(u32, u32)> {
    let parsed = text
        .split_once(['x', 'X'])
        .and_then(|(w, h)| Some((w.trim().parse::<u32>().ok()?, h.trim().parse::<u32>().ok()?)));
    match parsed {
        Some((w, h)) if (8..=4096).contains(&w) && (8..=4096).contains(&h) => Ok((w, h)),
        _ => anyhow::bail!(
            "size={text:?} is not WIDTHxHEIGHT with each side 8 to 4096 pixels, such as size=256x192"
        ),
    }
}

fn window() -> anyhow::Result<web_sys::Window> {
    web_sys::window()
        .ok_or_else(|| anyhow::anyhow!("no window: the page must run in a browser tab"))
}

fn document() -> Option<web_sys::Document> {
    web_sys::window()?.document()
}

/// A JavaScript exception as an error (its message when it is an `Error`).
pub fn js_error(value: JsValue) -> anyhow::Error {
    if let Some(err) = value.dyn_ref::<js_sys::Error>() {
        return anyhow::anyhow!("{}", String::from(err.message()));
    }
    anyhow::anyhow!(
        "{}",
        value.as_string().unwrap_or_else(|| format!("{value:?}"))
    )
}

/// Sets the page's title.
pub fn set_title(text: &str) {
    if let Some(doc) = document() {
        doc.set_title(text);
    }
}

/// Sets `data-NAME` on the page's root element (figures scripts read, such as frame times).
pub fn set_data(name: &str, value: &str) {
    if let Some(root) = document().and_then(|d| d.document_element()) {
        let _ = root.set_attribute(&format!("data-{name}"), value);
    }
}

/// Shows `message` in the status line over the canvas (`error` styles it as a failure).
pub fn status(message: &str, error: bool) {
    let Some(element) = document().and_then(|d| d.get_element_by_id("status")) else {
        return;
    };
    element.set_text_content(Some(message));
    element.set_class_name(if error { "error" } else { "" });
    let _ = element.set_attribute("style", "display: block");
}

/// Hides the status line.
pub fn hide_status() {
    if let Some(element) = document().and_then(|d| d.get_element_by_id("status")) {
        let _ = element.set_attribute("style", "display: none");
    }
}

/// Reports a failure: in the status line, in the browser's console, and in the title as
/// `wgsplat: error: MESSAGE`.
pub fn fail(message: &str) {
    web_sys::console::error_1(&JsValue::from_str(message));
    set_title(&format!("wgsplat: error: {message}"));
    status(&format!("error: {message}"), true);
}

/// The page's canvas (`<canvas id="wgsplat">`).
pub fn canvas() -> anyhow::Result<web_sys::HtmlCanvasElement> {
    document()
        .and_then(|d| d.get_element_by_id("wgsplat"))
        .ok_or_else(|| anyhow::anyhow!("the page has no <canvas id=\"wgsplat\">"))?
        .dyn_into::<web_sys::HtmlCanvasElement>()
        .map_err(|_| anyhow::anyhow!("the element with id \"wgsplat\" is not a canvas"))
}

/// The bytes at `url` (relative to the page).
pub async fn fetch_bytes(url: &str) -> anyhow::Result<Vec<u8>> {
    let response = JsFuture::from(window()?.fetch_with_str(url))
        .await
        .map_err(|e| anyhow::anyhow!("fetching {url}: {}", js_error(e)))?;
    let response: web_sys::Response = response.dyn_into().map_err(js_error)?;
    if !response.ok() {
        anyhow::bail!(
            "fetching {url}: the server answered {} {}; serve the model file beside the page",
            response.status(),
            response.status_text()
        );
    }
    let buffer = JsFuture::from(response.array_buffer().map_err(js_error)?)
        .await
        .map_err(|e| anyhow::anyhow!("reading {url}: {}", js_error(e)))?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}

/// A file the user picked or dropped, or a fetched model: its name and bytes, or what failed.
pub type Delivery = anyhow::Result<(String, Vec<u8>)>;

/// Opens the browser's file picker for model files; the chosen file arrives in `inbox`, and
/// `wake` runs when it has.
pub fn pick_file(
    inbox: Rc<RefCell<Vec<Delivery>>>,
    wake: impl Fn() + 'static,
) -> anyhow::Result<()> {
    let document = document().ok_or_else(|| anyhow::anyhow!("no document"))?;
    let input: web_sys::HtmlInputElement = document
        .create_element("input")
        .map_err(js_error)?
        .dyn_into()
        .map_err(|_| anyhow::anyhow!("could not create a file input"))?;
    input.set_type("file");
    input.set_accept(".ply,.spz,.splat,.sog");
    let chosen = input.clone();
    let wake = Rc::new(wake);
    let on_change = Closure::<dyn FnMut()>::new(move || {
        let Some(file) = chosen.files().and_then(|f| f.get(0)) else {
            return;
        };
        let (inbox, wake) = (inbox.clone(), wake.clone());
        wasm_bindgen_futures::spawn_local(async move {
            let name = file.name();
            let bytes = JsFuture::from(file.array_buffer())
                .await
                .map(|buffer| js_sys::Uint8Array::new(&buffer).to_vec())
                .map_err(|e| anyhow::anyhow!("reading {name}: {}", js_error(e)));
            inbox.borrow_mut().push(bytes.map(|b| (name, b)));
            wake();
        });
    });
    input.set_onchange(Some(on_change.as_ref().unchecked_ref()));
    on_change.forget();
    input.click();
    Ok(())
}

/// Resolves on the browser's next task: lets the page draw before a long computation.
pub async fn next_tick() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(window) = web_sys::window() {
            let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 0);
        }
    });
    let _ = JsFuture::from(promise).await;
}

/// Offers `bytes` to the user as a download named `name`.
pub fn download(name: &str, bytes: &[u8]) -> anyhow::Result<()> {
    let array = js_sys::Uint8Array::from(bytes);
    let parts = js_sys::Array::of1(&array);
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("application/octet-stream");
    let blob = web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &options)
        .map_err(js_error)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(js_error)?;
    let document = document().ok_or_else(|| anyhow::anyhow!("no document"))?;
    let anchor: web_sys::HtmlAnchorElement = document
        .create_element("a")
        .map_err(js_error)?
        .dyn_into()
        .map_err(|_| anyhow::anyhow!("could not create a link"))?;
    anchor.set_href(&url);
    anchor.set_download(name);
    anchor.click();
    web_sys::Url::revoke_object_url(&url).map_err(js_error)?;
    Ok(())
}
