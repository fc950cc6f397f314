"""DCGAN (in the style of the PyTorch DCGAN tutorial), 16x16 synthetic images, a few steps."""
import argparse
import random

import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn
import torch.optim as optim

nz, ngf, ndf, nc = 8, 8, 8, 1


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),  # 4x4
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),  # 8x8
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),  # 16x16
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),  # 8x8
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),  # 4x4
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def main():
    parser = argparse.ArgumentParser(description="DCGAN on synthetic 16x16 images")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--iters", type=int, default=12)
    parser.add_argument("--lr", type=float, default=0.0002)
    parser.add_argument("--beta1", type=float, default=0.5)
    parser.add_argument("--manual-seed", type=int, default=999)
    args = parser.parse_args()
    random.seed(args.manual_seed)
    torch.manual_seed(args.manual_seed)
    cudnn.benchmark = True
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")

    # "real" images: a bright square at a random place on a dark background
    real_images = -torch.ones(64, nc, 16, 16)
    for i in range(64):
        r, c = random.randrange(0, 10), random.randrange(0, 10)
        real_images[i, :, r:r + 6, c:c + 6] = 1.0

    netG = Generator().to(device)
    netG.apply(weights_init)
    netD = Discriminator().to(device)
    netD.apply(weights_init)
    criterion = nn.BCELoss()
    fixed_noise = torch.randn(16, nz, 1, 1, device=device)
    real_label, fake_label = 1.0, 0.0
    optimizerD = optim.Adam(netD.parameters(), lr=args.lr * 10, betas=(args.beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=args.lr * 10, betas=(args.beta1, 0.999))

    for i in range(args.iters):
        idx = torch.randint(0, 64, (args.batch_size,))
        real = real_images[idx].to(device)
        # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        label = torch.full((args.batch_size,), real_label, dtype=torch.float, device=device)
        errD_real = criterion(netD(real), label)
        errD_real.backward()
        noise = torch.randn(args.batch_size, nz, 1, 1, device=device)
        fake = netG(noise)
        label.fill_(fake_label)
        errD_fake = criterion(netD(fake.detach()), label)
        errD_fake.backward()
        errD = errD_real + errD_fake
        optimizerD.step()
        # (2) Update G: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        errG = criterion(netD(fake), label)
        errG.backward()
        optimizerG.step()
        print(f"[{i}/{args.iters}] Loss_D: {errD.item():.4f} Loss_G: {errG.item():.4f} "
              f"discriminator loss {errD.item():.6f}")
    with torch.no_grad():
        fake = netG(fixed_noise).detach().cpu()
    # to 8-bit pixels, as an image writer wants them
    pixels = (fake * 127.5 + 127.5).clamp(0, 255).to(torch.uint8)
    print("fixed-noise samples", tuple(pixels.shape), pixels.dtype)


if __name__ == "__main__":
    main()
