mod common;
use common::PeerCase;
use wgsplat::splat::backward::{BackwardOptions, record_backward};
use wgsplat::splat::forward::{RenderOptions, render};
use wgsplat::splat::{AlphaMode, GaussianTensors};
use wgsplat::testing::both_paths;
use wgsplat::{MemoryCategory, Tensor};

#[test]
fn debug_peer() {
    for ctx in both_paths() {
        let peer = PeerCase::load("basic_case.safetensors").unwrap();
        let mut enc = ctx.encoder("upload");
        let params = GaussianTensors::upload(&mut enc, &peer.gaussians, 3, MemoryCategory::Parameters, "p").unwrap();
        ctx.submit(enc).unwrap();
        let cam = PeerCase::camera();
        let fwd = render(ctx, &params, &cam, RenderOptions { sh_degree: 3, alpha_mode: AlphaMode::Hard }).unwrap();
        let mut enc = ctx.encoder("backward");
        let grads = GaussianTensors::zeros_like(&mut enc, &params, MemoryCategory::Gradients, "g").unwrap();
        let v = Tensor::from_slice(&mut enc, &peer.tensor("v_out_img"), fwd.image.shape(), MemoryCategory::Other, "v").unwrap();
        let out = record_backward(&mut enc, &params, &fwd, &v, &grads, None, BackwardOptions { detach_view_dir: true }).unwrap();
        ctx.submit(enc).unwrap();
        let vp = out.v_projected.read::<f32>(ctx).unwrap();
        let want = peer.tensor("v_xy");
        let wc = peer.tensor("v_conics");
        println!("{} V={} I={}", ctx.info().kernel_path(), fwd.num_visible, fwd.num_intersections);
        for i in 0..16 {
            println!("{i}: xy got ({:.3e},{:.3e}) want ({:.3e},{:.3e}) | conic got ({:.3e},{:.3e},{:.3e}) want ({:.3e},{:.3e},{:.3e}) | op {:.3e} col {:.3e}",
                vp[i*12], vp[i*12+1], want[2*i], want[2*i+1], vp[i*12+2], vp[i*12+3], vp[i*12+4], wc[3*i], wc[3*i+1], wc[3*i+2], vp[i*12+5], vp[i*12+6]);
        }
    }
}
